// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	thclient "github.com/gophercloud/gophercloud/v2/testhelper/client"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// newFakeNeutron serves a Neutron API whose handlers the test registers on the returned mux,
// with method patterns ("GET /v2.0/ports/p1"). Any other request fails the test: a bare
// ServeMux would answer 404, which the delete operations take for "already gone".
func newFakeNeutron(t *testing.T) (*Network, *http.ServeMux) {
	t.Helper()
	fake := th.SetupHTTP()
	t.Cleanup(fake.Teardown)
	fake.Mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		reply(w, http.StatusTeapot, `{}`)
	})
	client := thclient.ServiceClient(fake)
	// As networkClient builds it from the catalog: the resources live under v2.0/.
	client.ResourceBase = client.Endpoint + "v2.0/"
	return NewNetwork(client), fake.Mux
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// replyNeutronError answers in the error format of Neutron, which Classify reads.
func replyNeutronError(w http.ResponseWriter, status int, typ string) {
	reply(w, status, fmt.Sprintf(`{"NeutronError":{"type":%q,"message":"%s from the fake Neutron","detail":""}}`, typ, typ))
}

// wantQuery checks the whole query of a request; url.Values keeps repeated keys such as
// fixed_ips.
func wantQuery(t *testing.T, r *http.Request, want url.Values) {
	t.Helper()
	if got := r.URL.Query(); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%s %s: query %v, want %v", r.Method, r.URL.Path, got, want)
	}
}

// failure is how a classified error should look; the zero value means no error.
type failure struct {
	code      gardencorev1beta1.ErrorCode
	transient bool
	// text must be in the message, typically the operation.
	text string
}

func checkFailure(t *testing.T, err error, want failure) {
	t.Helper()
	if want == (failure{}) {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", want.text)
	}
	codes := v1beta1helper.ExtractErrorCodes(err)
	if want.code == "" && len(codes) != 0 || want.code != "" && !slices.Equal(codes, []gardencorev1beta1.ErrorCode{want.code}) {
		t.Errorf("codes %v, want %q; error: %v", codes, want.code, err)
	}
	if IsTransient(err) != want.transient {
		t.Errorf("transient %v, want %v; error: %v", IsTransient(err), want.transient, err)
	}
	if !strings.Contains(err.Error(), want.text) {
		t.Errorf("message %q does not contain %q", err, want.text)
	}
}

// TestLookupsOfConfiguredResourcesParseAndBlameTheConfig: the network and subnet are read
// by ID, and a 404 for them is the operator's configuration, not a transient failure.
func TestLookupsOfConfiguredResourcesParseAndBlameTheConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern string
		found   string
		// missing is the error type of Neutron's 404.
		missing string
		read    func(ctx context.Context, n *Network) (id, name string, err error)
		op      string
	}{
		{
			name: "network", pattern: "GET /v2.0/networks/n1", missing: "NetworkNotFound",
			found: `{"network":{"id":"n1","name":"nodes","status":"ACTIVE","subnets":["s1"]}}`,
			read: func(ctx context.Context, n *Network) (string, string, error) {
				nw, err := n.GetNetwork(ctx, "n1")
				if err != nil {
					return "", "", err
				}
				return nw.ID, nw.Name, nil
			},
			op: "read network n1",
		},
		{
			name: "subnet", pattern: "GET /v2.0/subnets/n1", missing: "SubnetNotFound",
			found: `{"subnet":{"id":"n1","name":"nodes-v4","network_id":"n0","cidr":"10.250.0.0/16","ip_version":4}}`,
			read: func(ctx context.Context, n *Network) (string, string, error) {
				s, err := n.GetSubnet(ctx, "n1")
				if err != nil {
					return "", "", err
				}
				return s.ID, s.Name, nil
			},
			op: "read subnet n1",
		},
	} {
		t.Run(tc.name+" found", func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc(tc.pattern, func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusOK, tc.found) })
			id, name, err := tc.read(t.Context(), n)
			if err != nil || id != "n1" || !strings.HasPrefix(name, "nodes") {
				t.Fatalf("got %q %q %v, want n1 and its name", id, name, err)
			}
		})
		t.Run(tc.name+" missing", func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc(tc.pattern, func(w http.ResponseWriter, _ *http.Request) {
				replyNeutronError(w, http.StatusNotFound, tc.missing)
			})
			_, _, err := tc.read(t.Context(), n)
			checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: tc.op})
		})
	}
}

func TestFindExternalNetworkByNameAsksForExternalNetworksOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		wantID string
		want   failure
	}{
		{name: "one", status: http.StatusOK, body: `{"networks":[{"id":"ext-1","name":"pool-b","router:external":true}]}`, wantID: "ext-1"},
		{name: "none", status: http.StatusOK, body: `{"networks":[]}`,
			want: failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: `floating pool "pool-b" does not exist`}},
		{name: "ambiguous", status: http.StatusOK, body: `{"networks":[{"id":"ext-1","name":"pool-b"},{"id":"ext-2","name":"pool-b"}]}`,
			want: failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: "ambiguous (2 external networks)"}},
		{name: "neutron down", status: http.StatusServiceUnavailable, body: `{}`,
			want: failure{transient: true, text: `look up floating pool "pool-b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc("GET /v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
				wantQuery(t, r, url.Values{"name": {"pool-b"}, "router:external": {"true"}})
				reply(w, tc.status, tc.body)
			})
			id, err := n.FindExternalNetworkByName(t.Context(), "pool-b")
			checkFailure(t, err, tc.want)
			if id != tc.wantID {
				t.Errorf("ID %q, want %q", id, tc.wantID)
			}
		})
	}
}

// TestExternalNetworkQueryRendersEachFilterAlone: without a name only router:external is
// sent, and without the external filter the name alone.
func TestExternalNetworkQueryRendersEachFilterAlone(t *testing.T) {
	external := true
	for _, tc := range []struct {
		name string
		opts externalListOpts
		want url.Values
	}{
		{name: "external only", opts: externalListOpts{External: &external}, want: url.Values{"router:external": {"true"}}},
		{name: "name only", opts: externalListOpts{ListOpts: networks.ListOpts{Name: "pool-b"}}, want: url.Values{"name": {"pool-b"}}},
		{name: "nothing", opts: externalListOpts{}, want: url.Values{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.opts.ToNetworkListQuery()
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(q)
			if err != nil {
				t.Fatalf("query %q: %v", q, err)
			}
			if got := u.Query(); !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("query %q, want %v", q, tc.want)
			}
		})
	}
}

func TestListPortsSendsEveryFilter(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("GET /v2.0/ports", func(w http.ResponseWriter, r *http.Request) {
		wantQuery(t, r, url.Values{
			"network_id": {"n1"},
			"name":       {"vip"},
			"tags":       {TagExtension + "," + ClusterTag("c1")},
			"fixed_ips":  {"ip_address=198.18.0.11", "ip_address=198.18.0.12"},
		})
		reply(w, http.StatusOK, `{"ports":[`+
			`{"id":"p1","network_id":"n1","fixed_ips":[{"subnet_id":"s1","ip_address":"198.18.0.11"}]},`+
			`{"id":"p2","network_id":"n1","fixed_ips":[{"subnet_id":"s1","ip_address":"198.18.0.12"}]}]}`)
	})
	list, err := n.ListPorts(t.Context(), PortFilter{NetworkID: "n1", Name: "vip", Tags: []string{TagExtension, ClusterTag("c1")}, FixedIPs: []string{"198.18.0.11", "198.18.0.12"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "p1" || !HasFixedIP(&list[1], "198.18.0.12") {
		t.Errorf("ports %+v, want p1 and p2 with their addresses", list)
	}
}

func TestListPortsFailureIsTransient(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("GET /v2.0/ports", func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusBadGateway, `{}`) })
	_, err := n.ListPorts(t.Context(), PortFilter{})
	checkFailure(t, err, failure{transient: true, text: "list ports"})
}

// TestGetPortThatVanishedIsTransient: a port is no configured resource, so its 404 is a
// node replacement in progress to be retried, and still recognisable as "not found".
func TestGetPortThatVanishedIsTransient(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, `{"port":{"id":"p1","mac_address":"fa:16:3e:00:00:01","revision_number":7}}`)
	})
	mux.HandleFunc("GET /v2.0/ports/p2", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusNotFound, "PortNotFound")
	})
	p, err := n.GetPort(t.Context(), "p1")
	if err != nil || p.ID != "p1" || p.MACAddress != "fa:16:3e:00:00:01" || p.RevisionNumber != 7 {
		t.Fatalf("port %+v, %v", p, err)
	}
	_, err = n.GetPort(t.Context(), "p2")
	checkFailure(t, err, failure{transient: true, text: "read port p2"})
	if !IsNotFound(err) {
		t.Errorf("the classified 404 is not recognised as not found: %v", err)
	}
}

// TestCreateVIPPortTagsInTheCreateRequest: the tags travel with the create request (no
// second request that could fail and leave an untagged port), and an untagged spec sends
// no tags key at all.
func TestCreateVIPPortTagsInTheCreateRequest(t *testing.T) {
	spec := VIPPortSpec{
		Name: "kube-vip-c1", Description: "VIP of c1", NetworkID: "n1", SubnetID: "s4", IPAddress: "198.18.0.5",
		OtherFixedIPs: []ports.IP{{SubnetID: "s6"}},
	}
	const fixedIPs = `[{"subnet_id":"s4","ip_address":"198.18.0.5"},{"subnet_id":"s6"}]`
	for _, tc := range []struct {
		name     string
		tags     []string
		wantBody string
	}{
		{name: "tagged", tags: []string{TagExtension, ClusterTag("c1")},
			wantBody: `{"port":{"network_id":"n1","name":"kube-vip-c1","description":"VIP of c1","fixed_ips":` + fixedIPs + `,"tags":["` + TagExtension + `","kube-vip-cluster=c1"]}}`},
		{name: "untagged",
			wantBody: `{"port":{"network_id":"n1","name":"kube-vip-c1","description":"VIP of c1","fixed_ips":` + fixedIPs + `}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc("POST /v2.0/ports", func(w http.ResponseWriter, r *http.Request) {
				th.TestJSONRequest(t, r, tc.wantBody)
				reply(w, http.StatusCreated, `{"port":{"id":"vip-1","network_id":"n1","fixed_ips":[{"subnet_id":"s4","ip_address":"198.18.0.5"},{"subnet_id":"s6","ip_address":"2001:db8::5"}]}}`)
			})
			s := spec
			s.Tags = tc.tags
			p, err := n.CreateVIPPort(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != "vip-1" || PortAddress(p, "s6") != "2001:db8::5" {
				t.Errorf("port %+v, want vip-1 with the address Neutron picked in s6", p)
			}
		})
	}
}

func TestCreateVIPPortOnATakenAddressIsAConfigurationProblem(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("POST /v2.0/ports", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusConflict, "IpAddressAlreadyAllocated")
	})
	_, err := n.CreateVIPPort(t.Context(), VIPPortSpec{NetworkID: "n1", SubnetID: "s4", IPAddress: "198.18.0.5"})
	checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: "create the VIP port"})
	if !IsAddressTaken(err) {
		t.Errorf("not recognised as a taken address: %v", err)
	}
}

func TestCheckVIPPortRefusesAChangedNetworkOrVIP(t *testing.T) {
	port := &ports.Port{ID: "vip-1", NetworkID: "n1", FixedIPs: []ports.IP{
		{SubnetID: "s4", IPAddress: "198.18.0.5"}, {SubnetID: "s6", IPAddress: "2001:db8::5"},
	}}
	for _, tc := range []struct {
		name string
		spec VIPPortSpec
		text string
	}{
		{name: "same", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s4", IPAddress: "198.18.0.5", OtherFixedIPs: []ports.IP{{SubnetID: "s6", IPAddress: "2001:db8::5"}}}},
		{name: "addresses picked by Neutron", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s4", OtherFixedIPs: []ports.IP{{SubnetID: "s6"}}}},
		{name: "other network", spec: VIPPortSpec{NetworkID: "n2", SubnetID: "s4"}, text: "the network of an exposure cannot change"},
		{name: "other VIP", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s4", IPAddress: "198.18.0.6"}, text: "has the address 198.18.0.5"},
		{name: "other subnet", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s9"}, text: "not one matching subnet s9"},
		{name: "second family missing", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s4", OtherFixedIPs: []ports.IP{{SubnetID: "s7"}}}, text: "no address matching subnet s7"},
		{name: "second family changed", spec: VIPPortSpec{NetworkID: "n1", SubnetID: "s4", OtherFixedIPs: []ports.IP{{SubnetID: "s6", IPAddress: "2001:db8::6"}}}, text: `VIP "2001:db8::6"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckVIPPort(port, tc.spec)
			if tc.text == "" {
				checkFailure(t, err, failure{})
				return
			}
			checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: tc.text})
		})
	}
}

// TestDeleteTreatsNotFoundAsGone: deleting what is already gone succeeds, so a retried
// deletion converges; other failures are reported with the operation.
func TestDeleteTreatsNotFoundAsGone(t *testing.T) {
	for _, kind := range []struct {
		name, pattern, op string
		del               func(ctx context.Context, n *Network) error
	}{
		{name: "port", pattern: "DELETE /v2.0/ports/x1", op: "delete port x1",
			del: func(ctx context.Context, n *Network) error { return n.DeletePort(ctx, "x1") }},
		{name: "floating IP", pattern: "DELETE /v2.0/floatingips/x1", op: "delete floating IP x1",
			del: func(ctx context.Context, n *Network) error { return n.DeleteFloatingIP(ctx, "x1") }},
	} {
		for _, tc := range []struct {
			name   string
			status int
			typ    string
			want   failure
		}{
			{name: "deleted", status: http.StatusNoContent},
			{name: "already gone", status: http.StatusNotFound, typ: "PortNotFound"},
			{name: "conflict", status: http.StatusConflict, typ: "PortInUse", want: failure{transient: true, text: kind.op}},
			{name: "forbidden", status: http.StatusForbidden, typ: "PolicyNotAuthorized", want: failure{code: gardencorev1beta1.ErrorInfraUnauthorized, text: kind.op}},
		} {
			t.Run(kind.name+" "+tc.name, func(t *testing.T) {
				n, mux := newFakeNeutron(t)
				var calls atomic.Int32
				mux.HandleFunc(kind.pattern, func(w http.ResponseWriter, _ *http.Request) {
					calls.Add(1)
					if tc.status == http.StatusNoContent {
						w.WriteHeader(tc.status)
						return
					}
					replyNeutronError(w, tc.status, tc.typ)
				})
				checkFailure(t, kind.del(t.Context(), n), tc.want)
				if calls.Load() != 1 {
					t.Errorf("%d DELETE requests, want 1", calls.Load())
				}
			})
		}
	}
}

func TestReplacePortTagsPutsTheWholeList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   failure
	}{
		{name: "replaced", status: http.StatusOK},
		{name: "forbidden", status: http.StatusForbidden, want: failure{code: gardencorev1beta1.ErrorInfraUnauthorized, text: "tag port p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc("PUT /v2.0/ports/p1/tags", func(w http.ResponseWriter, r *http.Request) {
				th.TestJSONRequest(t, r, `{"tags":["`+TagExtension+`","kube-vip-cluster=c1"]}`)
				if tc.status != http.StatusOK {
					replyNeutronError(w, tc.status, "PolicyNotAuthorized")
					return
				}
				reply(w, tc.status, `{"tags":["`+TagExtension+`","kube-vip-cluster=c1"]}`)
			})
			checkFailure(t, n.ReplacePortTags(t.Context(), "p1", []string{TagExtension, ClusterTag("c1")}), tc.want)
		})
	}
}

// TestCreateFloatingIPAssociatesInTheSameRequest: pool, port, fixed IP, address and
// description go into one create request, so no floating IP is left unassociated.
func TestCreateFloatingIPAssociatesInTheSameRequest(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("POST /v2.0/floatingips", func(w http.ResponseWriter, r *http.Request) {
		th.TestJSONRequest(t, r, `{"floatingip":{"floating_network_id":"ext-1","port_id":"vip-1","fixed_ip_address":"198.18.0.5","floating_ip_address":"203.0.113.7","description":"kube-vip c1"}}`)
		reply(w, http.StatusCreated, `{"floatingip":{"id":"f1","floating_network_id":"ext-1","port_id":"vip-1","fixed_ip_address":"198.18.0.5","floating_ip_address":"203.0.113.7","status":"DOWN"}}`)
	})
	fip, err := n.CreateFloatingIP(t.Context(), FloatingIPSpec{FloatingNetworkID: "ext-1", PortID: "vip-1", FixedIP: "198.18.0.5", Address: "203.0.113.7", Description: "kube-vip c1"})
	if err != nil {
		t.Fatal(err)
	}
	if fip.ID != "f1" || fip.FloatingIP != "203.0.113.7" || fip.PortID != "vip-1" {
		t.Errorf("floating IP %+v", fip)
	}
}

func TestCreateFloatingIPWithoutRouterIsAConfigurationProblem(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("POST /v2.0/floatingips", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound")
	})
	_, err := n.CreateFloatingIP(t.Context(), FloatingIPSpec{FloatingNetworkID: "ext-1", PortID: "vip-1"})
	checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: "router with a gateway"})
}

func TestFloatingIPLookupsFilterOnTheServer(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("GET /v2.0/floatingips", func(w http.ResponseWriter, r *http.Request) {
		switch q := r.URL.Query(); {
		case q.Get("port_id") == "vip-1":
			wantQuery(t, r, url.Values{"port_id": {"vip-1"}})
			reply(w, http.StatusOK, `{"floatingips":[{"id":"f1","port_id":"vip-1","floating_ip_address":"203.0.113.7"},{"id":"f2","port_id":"vip-1","floating_ip_address":"203.0.113.8"}]}`)
		case q.Get("floating_ip_address") == "203.0.113.7":
			wantQuery(t, r, url.Values{"floating_ip_address": {"203.0.113.7"}})
			reply(w, http.StatusOK, `{"floatingips":[{"id":"f1","port_id":"vip-1","floating_ip_address":"203.0.113.7"}]}`)
		case q.Get("floating_ip_address") == "203.0.113.99":
			reply(w, http.StatusOK, `{"floatingips":[]}`)
		default:
			t.Errorf("unexpected query %q", r.URL.RawQuery)
			reply(w, http.StatusInternalServerError, `{}`)
		}
	})
	mux.HandleFunc("GET /v2.0/floatingips/f1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, `{"floatingip":{"id":"f1","port_id":"vip-1","floating_ip_address":"203.0.113.7"}}`)
	})
	mux.HandleFunc("GET /v2.0/floatingips/f9", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusNotFound, "FloatingIPNotFound")
	})

	ofPort, err := n.FloatingIPsOfPort(t.Context(), "vip-1")
	if err != nil || len(ofPort) != 2 || ofPort[0].ID != "f1" || ofPort[1].ID != "f2" {
		t.Errorf("floating IPs of vip-1: %+v, %v", ofPort, err)
	}
	byAddress, err := n.FindFloatingIPByAddress(t.Context(), "203.0.113.7")
	if err != nil || byAddress.ID != "f1" {
		t.Errorf("floating IP 203.0.113.7: %+v, %v", byAddress, err)
	}
	_, err = n.FindFloatingIPByAddress(t.Context(), "203.0.113.99")
	checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: "floating IP 203.0.113.99 is not allocated"})
	byID, err := n.GetFloatingIP(t.Context(), "f1")
	if err != nil || byID.FloatingIP != "203.0.113.7" {
		t.Errorf("floating IP f1: %+v, %v", byID, err)
	}
	_, err = n.GetFloatingIP(t.Context(), "f9")
	checkFailure(t, err, failure{transient: true, text: "read floating IP f9"})
}

func TestFloatingIPListFailureIsTransient(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("GET /v2.0/floatingips", func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusServiceUnavailable, `{}`) })
	_, err := n.FindFloatingIPByAddress(t.Context(), "203.0.113.7")
	checkFailure(t, err, failure{transient: true, text: "list floating IPs"})
}

// TestFloatingIPAssociationSendsThePortOrNull: associating names the port; disassociating
// must send "port_id": null (an omitted port_id would change nothing), and a floating IP
// that is gone counts as disassociated.
func TestFloatingIPAssociationSendsThePortOrNull(t *testing.T) {
	associate := func(ctx context.Context, n *Network) (string, error) {
		fip, err := n.AssociateFloatingIP(ctx, "f1", "vip-1")
		if err != nil {
			return "", err
		}
		return fip.PortID, nil
	}
	disassociate := func(ctx context.Context, n *Network) (string, error) {
		return "", n.DisassociateFloatingIP(ctx, "f1")
	}
	const toPort, toNull = `{"floatingip":{"port_id":"vip-1"}}`, `{"floatingip":{"port_id":null}}`
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, n *Network) (portID string, err error)
		body string
		// status is Neutron's answer; with 200 the floating IP is associated with answerPort.
		status     int
		answerPort string
		want       failure
	}{
		{name: "associate", call: associate, body: toPort, status: http.StatusOK, answerPort: "vip-1"},
		{name: "associate a vanished floating IP", call: associate, body: toPort, status: http.StatusNotFound,
			want: failure{transient: true, text: "associate floating IP f1"}},
		{name: "disassociate", call: disassociate, body: toNull, status: http.StatusOK},
		{name: "disassociate a vanished floating IP", call: disassociate, body: toNull, status: http.StatusNotFound},
		{name: "disassociate fails", call: disassociate, body: toNull, status: http.StatusInternalServerError,
			want: failure{transient: true, text: "disassociate floating IP f1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc("PUT /v2.0/floatingips/f1", func(w http.ResponseWriter, r *http.Request) {
				th.TestJSONRequest(t, r, tc.body)
				if tc.status != http.StatusOK {
					replyNeutronError(w, tc.status, "FloatingIPNotFound")
					return
				}
				reply(w, http.StatusOK, fmt.Sprintf(`{"floatingip":{"id":"f1","floating_ip_address":"203.0.113.7","port_id":%q}}`, tc.answerPort))
			})
			portID, err := tc.call(t.Context(), n)
			checkFailure(t, err, tc.want)
			if portID != tc.answerPort {
				t.Errorf("associated with %q, want %q", portID, tc.answerPort)
			}
		})
	}
}

// nodePortJSON is a node's port as Neutron returns it, with the revision and the pairs given.
func nodePortJSON(revision int, pairs ...string) string {
	entries := make([]string, len(pairs))
	for i, p := range pairs {
		entries[i] = fmt.Sprintf(`{"ip_address":%q,"mac_address":"fa:16:3e:00:00:01"}`, p)
	}
	return fmt.Sprintf(`{"port":{"id":"p1","network_id":"n1","mac_address":"fa:16:3e:00:00:01","revision_number":%d,"allowed_address_pairs":[%s]}}`,
		revision, strings.Join(entries, ","))
}

// pairsBody is the update request that sets exactly these pairs.
func pairsBody(pairs ...string) string {
	entries := make([]string, len(pairs))
	for i, p := range pairs {
		entries[i] = fmt.Sprintf(`{"ip_address":%q}`, p)
	}
	return `{"port":{"allowed_address_pairs":[` + strings.Join(entries, ",") + `]}}`
}

// nodePort is the caller's last read of the node port, with pairs as Neutron stores them.
func nodePort(revision int, pairs ...string) *ports.Port {
	p := &ports.Port{ID: "p1", NetworkID: "n1", MACAddress: "fa:16:3e:00:00:01", RevisionNumber: revision}
	for _, ip := range pairs {
		p.AllowedAddressPairs = append(p.AllowedAddressPairs, ports.AddressPair{IPAddress: ip})
	}
	return p
}

// TestEnsurePairUpdatesOnTheCallersRevision: the pair is added to the others in an update
// conditional on the revision the caller read, and the caller's port becomes Neutron's
// answer; a pair already present costs no request.
func TestEnsurePairUpdatesOnTheCallersRevision(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, r *http.Request) {
		th.TestHeader(t, r, "If-Match", "revision_number=3")
		th.TestJSONRequest(t, r, pairsBody("10.250.0.0/16", "198.18.0.5"))
		reply(w, http.StatusOK, nodePortJSON(4, "10.250.0.0/16", "198.18.0.5"))
	})
	port := nodePort(3, "10.250.0.0/16")
	updated, err := n.EnsurePair(t.Context(), port, "198.18.0.5")
	if err != nil || !updated {
		t.Fatalf("updated %v, %v", updated, err)
	}
	if port.RevisionNumber != 4 || !HasPair(port, "198.18.0.5") {
		t.Errorf("the caller's port is not Neutron's answer: %+v", port)
	}
	// The handler above would fail the test on a second update with revision 4.
	if updated, err := n.EnsurePair(t.Context(), port, "198.18.0.5"); err != nil || updated {
		t.Errorf("ensuring a present pair: updated %v, %v", updated, err)
	}
}

// TestEnsurePairMergesAgainAfterAStaleRevision: when another writer changed the port in
// between (412), the port is read again and the pair merged into the new pairs, keeping the
// other writer's pair.
func TestEnsurePairMergesAgainAfterAStaleRevision(t *testing.T) {
	n, mux := newFakeNeutron(t)
	var puts, gets atomic.Int32
	mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, r *http.Request) {
		if puts.Add(1) == 1 {
			th.TestHeader(t, r, "If-Match", "revision_number=3")
			th.TestJSONRequest(t, r, pairsBody("198.18.0.5"))
			replyNeutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed")
			return
		}
		th.TestHeader(t, r, "If-Match", "revision_number=5")
		// The other writer's pair comes back from Neutron with the port's MAC and is kept as is.
		th.TestJSONRequest(t, r, `{"port":{"allowed_address_pairs":[{"ip_address":"10.96.0.10","mac_address":"fa:16:3e:00:00:01"},{"ip_address":"198.18.0.5"}]}}`)
		reply(w, http.StatusOK, nodePortJSON(6, "10.96.0.10", "198.18.0.5"))
	})
	mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		gets.Add(1)
		reply(w, http.StatusOK, nodePortJSON(5, "10.96.0.10"))
	})
	port := nodePort(3)
	updated, err := n.EnsurePair(t.Context(), port, "198.18.0.5")
	if err != nil || !updated || port.RevisionNumber != 6 {
		t.Fatalf("updated %v, revision %d, %v; want an update to revision 6", updated, port.RevisionNumber, err)
	}
	if puts.Load() != 2 || gets.Load() != 1 {
		t.Errorf("%d updates and %d reads, want 2 and 1", puts.Load(), gets.Load())
	}
}

// TestEnsurePairKeepsTheReReadWhenAnotherWriterAddedThePair: after a 412 the re-read
// shows the pair already there. No write follows, and the caller's port is the re-read,
// so that its next change (a dual-stack node's other VIP) starts on the current revision.
func TestEnsurePairKeepsTheReReadWhenAnotherWriterAddedThePair(t *testing.T) {
	n, mux := newFakeNeutron(t)
	var puts atomic.Int32
	mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		puts.Add(1)
		replyNeutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed")
	})
	mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, nodePortJSON(5, "198.18.0.5"))
	})
	port := nodePort(3)
	updated, err := n.EnsurePair(t.Context(), port, "198.18.0.5")
	if err != nil || updated {
		t.Fatalf("updated %v, %v; want no update", updated, err)
	}
	if puts.Load() != 1 || port.RevisionNumber != 5 || !HasPair(port, "198.18.0.5") {
		t.Errorf("%d updates, the caller's port at revision %d with pairs %v; want 1 update and the re-read (revision 5)", puts.Load(), port.RevisionNumber, port.AllowedAddressPairs)
	}
}

// TestEnsurePairGivesUpOnEndlessConflicts: a port whose revision keeps moving is retried
// maxRevisionRetries times, then the failure is returned as transient for a later retry.
func TestEnsurePairGivesUpOnEndlessConflicts(t *testing.T) {
	n, mux := newFakeNeutron(t)
	var puts, gets atomic.Int32
	mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		puts.Add(1)
		replyNeutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed")
	})
	mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, nodePortJSON(int(10+gets.Add(1))))
	})
	updated, err := n.EnsurePair(t.Context(), nodePort(3), "198.18.0.5")
	checkFailure(t, err, failure{transient: true, text: "add the VIP to the allowed address pairs of port p1"})
	if updated {
		t.Error("updated after a failure")
	}
	if puts.Load() != maxRevisionRetries || gets.Load() != maxRevisionRetries-1 {
		t.Errorf("%d updates and %d reads, want %d and %d", puts.Load(), gets.Load(), maxRevisionRetries, maxRevisionRetries-1)
	}
}

func TestEnsurePairOnAPortWithoutPortSecurity(t *testing.T) {
	n, mux := newFakeNeutron(t)
	mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusConflict, "AddressPairAndPortSecurityRequired")
	})
	_, err := n.EnsurePair(t.Context(), nodePort(3), "198.18.0.5")
	checkFailure(t, err, failure{code: gardencorev1beta1.ErrorConfigurationProblem, text: "port security disabled"})
	if !IsPortSecurityDisabled(err) {
		t.Errorf("not recognised as port security disabled: %v", err)
	}
}

// TestRemovePairFromPortTreatsNotFoundAsGone: a port deleted with its node has no pair to
// remove, whether it vanished before the update or before the re-read after a conflict.
func TestRemovePairFromPortTreatsNotFoundAsGone(t *testing.T) {
	for _, tc := range []struct {
		name        string
		putStatus   int
		getStatus   int
		wantUpdated bool
		want        failure
	}{
		{name: "removed", putStatus: http.StatusOK, wantUpdated: true},
		{name: "gone on update", putStatus: http.StatusNotFound},
		{name: "gone on re-read", putStatus: http.StatusPreconditionFailed, getStatus: http.StatusNotFound},
		{name: "neutron fails", putStatus: http.StatusInternalServerError,
			want: failure{transient: true, text: "remove the VIP from the allowed address pairs of port p1"}},
		{name: "re-read fails", putStatus: http.StatusPreconditionFailed, getStatus: http.StatusServiceUnavailable,
			want: failure{transient: true, text: "remove the VIP from the allowed address pairs of port p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mux := newFakeNeutron(t)
			mux.HandleFunc("PUT /v2.0/ports/p1", func(w http.ResponseWriter, r *http.Request) {
				th.TestHeader(t, r, "If-Match", "revision_number=3")
				th.TestJSONRequest(t, r, pairsBody("10.250.0.0/16"))
				switch tc.putStatus {
				case http.StatusOK:
				case http.StatusPreconditionFailed:
					replyNeutronError(w, tc.putStatus, "RevisionNumberConstraintFailed")
					return
				default:
					replyNeutronError(w, tc.putStatus, "PortNotFound")
					return
				}
				reply(w, http.StatusOK, nodePortJSON(4, "10.250.0.0/16"))
			})
			if tc.getStatus != 0 {
				mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
					replyNeutronError(w, tc.getStatus, "PortNotFound")
				})
			}
			port := nodePort(3, "10.250.0.0/16", "198.18.0.5")
			updated, err := n.RemovePairFromPort(t.Context(), port, "198.18.0.5")
			checkFailure(t, err, tc.want)
			if updated != tc.wantUpdated || tc.wantUpdated && HasPair(port, "198.18.0.5") {
				t.Errorf("updated %v, pairs %v; want updated %v", updated, port.AllowedAddressPairs, tc.wantUpdated)
			}
		})
	}
}

// TestRejectedCredentialsAreReported: a 401 from Neutron tells the factory to drop its
// cached client, on reads of configured resources as on other calls; other failures do not.
func TestRejectedCredentialsAreReported(t *testing.T) {
	n, mux := newFakeNeutron(t)
	var rejected []error
	n.rejected = func(err error) { rejected = append(rejected, err) }
	mux.HandleFunc("GET /v2.0/networks/n1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusUnauthorized, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`)
	})
	mux.HandleFunc("GET /v2.0/ports/p1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusUnauthorized, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`)
	})
	mux.HandleFunc("GET /v2.0/networks/n2", func(w http.ResponseWriter, _ *http.Request) {
		replyNeutronError(w, http.StatusNotFound, "NetworkNotFound")
	})

	_, lookupErr := n.GetNetwork(t.Context(), "n1")
	_, portErr := n.GetPort(t.Context(), "p1")
	_, _ = n.GetNetwork(t.Context(), "n2")
	if len(rejected) != 2 || rejected[0] != lookupErr || rejected[1] != portErr { //nolint:errorlint // the very errors returned
		t.Fatalf("reported %v, want the two 401s %v and %v", rejected, lookupErr, portErr)
	}
	checkFailure(t, lookupErr, failure{code: gardencorev1beta1.ErrorInfraUnauthenticated, text: "read network n1"})
}

// TestOwnerAndShootTagsGiveBackTheirUID: the tags are read back by cutting their prefix, and
// the two kinds never match each other's prefix.
func TestOwnerAndShootTagsGiveBackTheirUID(t *testing.T) {
	const uid = "6f1c9a2e-0d4b-4a8e-9a51-3c2f0b7d8e11"
	for _, tc := range []struct{ tag, prefix, other string }{
		{OwnerTag(uid), OwnerTagPrefix, ShootTagPrefix},
		{ShootTag(uid), ShootTagPrefix, OwnerTagPrefix},
	} {
		if got, ok := strings.CutPrefix(tc.tag, tc.prefix); !ok || got != uid {
			t.Errorf("%q without %q is %q, want %q", tc.tag, tc.prefix, got, uid)
		}
		if strings.HasPrefix(tc.tag, tc.other) {
			t.Errorf("%q also has the prefix %q", tc.tag, tc.other)
		}
	}
}
