// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
)

// infrastructure is provider-openstack's Infrastructure in kube-system with the
// providerStatus raw ("" for none yet).
func infrastructure(name, raw string) *extensionsv1alpha1.Infrastructure {
	infra := &extensionsv1alpha1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	if raw != "" {
		infra.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(raw)}
	}
	return infra
}

const infraStatus = `{"networks":{"id":"net-infra","floatingPool":{"id":"ext-infra","name":"public"},` +
	`"subnets":[{"purpose":"nodes","id":"sub-infra","cidr":"10.250.0.0/16"},{"purpose":"nodes-ipv6","id":"sub-infra-v6","cidr":"2001:db8::/64"}]}}`

// withoutConfig drops the exposure's provider config: everything comes from the Infrastructure.
func withoutConfig(exp *extensionsv1alpha1.SelfHostedShootExposure, _ *corev1.Secret) {
	exp.Spec.ProviderConfig = nil
}

func TestGatherInputsTakesTheDefaultsFromTheInfrastructure(t *testing.T) {
	cl := newCluster(t, withoutConfig, infrastructure("infra", infraStatus))
	in, err := cl.a.gatherInputs(t.Context(), cl.exp, cl.cluster, &v1alpha1.ExposureStatus{})
	if err != nil {
		t.Fatal(err)
	}
	c := in.config
	if c.NetworkID != "net-infra" || c.SubnetID != "sub-infra" || c.SubnetCIDR != "10.250.0.0/16" || c.FloatingNetworkID != "ext-infra" || len(c.OtherSubnets) != 0 {
		t.Errorf("config %+v, want the Infrastructure's IPv4 network, subnet and pool", c)
	}
	if in.identity != "shoot--p--shoot" || in.mark.Shoot != "shoot-a" {
		t.Errorf("identity %q, mark %+v; want the Shoot's technical ID and UID", in.identity, in.mark)
	}

	// A dual-stack Shoot gets the IPv6 node subnet as the VIP port's second fixed IP.
	cl.cluster.Shoot.Spec.Networking = &gardencorev1beta1.Networking{IPFamilies: []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4, gardencorev1beta1.IPFamilyIPv6}}
	in, err = cl.a.gatherInputs(t.Context(), cl.exp, cl.cluster, &v1alpha1.ExposureStatus{})
	if err != nil {
		t.Fatal(err)
	}
	if in.config.SubnetID != "sub-infra" || len(in.config.OtherSubnets) != 1 || in.config.OtherSubnets[0].SubnetID != "sub-infra-v6" {
		t.Errorf("dual-stack config %+v, want sub-infra first and sub-infra-v6 beside it", in.config)
	}
}

func TestGatherInputsWithoutNetworkAndNoInfrastructureStatusGivesUp(t *testing.T) {
	// Bootstrap: the Infrastructure has reported nothing yet and the config alone is
	// incomplete; after InfrastructureWait the operator is told what to set.
	cl := newCluster(t, withoutConfig, infrastructure("infra", ""))
	cl.a.opts.InfrastructureWait = 10 * time.Millisecond
	_, err := cl.a.gatherInputs(t.Context(), cl.exp, cl.cluster, &v1alpha1.ExposureStatus{})
	if !slices.Contains(v1beta1helper.ExtractErrorCodes(err), gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(err.Error(), "has reported no status") {
		t.Fatalf("got %v, want a configuration problem about the Infrastructure's status", err)
	}
}

func TestInfrastructureStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		wantReady bool
		wantNet   string
		wantErr   bool
	}{
		{"none", nil, false, "", false},
		{"not reported yet", []client.Object{infrastructure("infra", "")}, false, "", false},
		{"reported", []client.Object{infrastructure("infra", infraStatus)}, true, "net-infra", false},
		{"the first by name of two", []client.Object{infrastructure("b", `{"networks":{"id":"net-b"}}`), infrastructure("a", `{"networks":{"id":"net-a"}}`)}, true, "net-a", false},
		{"unreadable", []client.Object{infrastructure("infra", `{"networks":[]}`)}, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, nil, tc.objs...)
			status, ready, err := cl.a.infrastructureStatus(t.Context(), "kube-system")
			if (err != nil) != tc.wantErr || ready != tc.wantReady || (err == nil && status.Networks.ID != tc.wantNet) {
				t.Errorf("%+v, ready %v, %v; want network %q, ready %v, error %v", status, ready, err, tc.wantNet, tc.wantReady, tc.wantErr)
			}
		})
	}
}

func node(name, uid string, labels map[string]string, ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID(uid), Labels: labels}}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	return n
}

func TestControlPlaneNodes(t *testing.T) {
	cp := map[string]string{LabelControlPlane: ""}
	paired := map[string]string{LabelControlPlane: "", agentrollout.PairLabel: "x"}
	cl := newCluster(t, nil,
		node("cp-b", "uid-b", cp, "10.0.0.2", "2001:db8::2"),
		node("cp-a", "uid-a", paired, "10.0.0.1"),
		node("cp-without-ip", "uid-c", cp),
		node("worker", "uid-w", nil, "10.0.0.9"))
	nodes, err := cl.a.controlPlaneNodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by name, only control-plane Nodes with an InternalIP, the other family's
	// address kept for the port lookup.
	if len(nodes) != 2 || nodes[0].Name != "cp-a" || nodes[0].pairLabel != "x" || nodes[1].Name != "cp-b" ||
		nodes[1].IP != "10.0.0.2" || !slices.Equal(nodes[1].OtherIPs, []string{"2001:db8::2"}) || nodes[1].UID != "uid-b" {
		t.Errorf("nodes %+v", nodes)
	}
	ips, err := cl.a.controlPlaneNodeIPs(t.Context())
	if err != nil || !slices.Contains(ips, "10.0.0.1") || !slices.Contains(ips, "10.0.0.2") || slices.Contains(ips, "10.0.0.9") {
		t.Errorf("node IPs %v (%v), want both control-plane nodes' and not the worker's", ips, err)
	}
}

func TestClusterIdentity(t *testing.T) {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "kube-system"}}
	shoot := func(technicalID, name string) *extensionscontroller.Cluster {
		return &extensionscontroller.Cluster{Shoot: &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-p"}, Status: gardencorev1beta1.ShootStatus{TechnicalID: technicalID}}}
	}
	byName := clusterIdentity(exp, shoot("", "s"))
	for _, tc := range []struct {
		name    string
		cluster *extensionscontroller.Cluster
		check   func(string) bool
	}{
		{"the technical ID", shoot("shoot--p--s", "s"), func(id string) bool { return id == "shoot--p--s" }},
		{"unsafe characters replaced", shoot("shoot p/s", "s"), func(id string) bool { return id == "shoot-p-s" }},
		{"a long technical ID truncated for the port name", shoot(strings.Repeat("x", 300), "s"), func(id string) bool { return len(id) == 200 }},
		{"without technical ID, a hash of the Shoot's name", shoot("", "s"), func(id string) bool { return strings.HasPrefix(id, "shoot-") && len(id) == len("shoot-")+16 }},
		{"another Shoot's name hashes otherwise", shoot("", "t"), func(id string) bool { return id != byName }},
		// The bootstrap cluster has no Shoot: the exposure's own name, stable across the move.
		{"without Shoot", nil, func(id string) bool { return strings.HasPrefix(id, "exposure-") }},
	} {
		if id := clusterIdentity(exp, tc.cluster); !tc.check(id) {
			t.Errorf("%s: %q", tc.name, id)
		}
	}
}

func TestValidateAgainstNeutron(t *testing.T) {
	// The fake's subnets are all 198.18.0.0/24 in network "net"; every pool is "ext".
	for _, tc := range []struct {
		name     string
		config   Config
		mentions string
		wantPool string
	}{
		{"a subnet only Neutron knows, VIP in range, pool by name", Config{Spec: networking.Spec{NetworkID: "net", SubnetID: "sub", VIPAddress: "198.18.0.10", FloatingPoolName: "public"}}, "", "ext"},
		{"a VIP outside the subnet", Config{Spec: networking.Spec{NetworkID: "net", SubnetID: "sub", VIPAddress: "10.0.0.10", FloatingNetworkID: "ext"}}, "vipAddress", ""},
		{"a subnet of another network", Config{Spec: networking.Spec{NetworkID: "net-2", SubnetID: "sub", FloatingNetworkID: "ext"}}, "not in network net-2", ""},
		{"an internal exposure needs no pool", Config{Spec: networking.Spec{NetworkID: "net", SubnetID: "sub", InternalOnly: true}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "uid-self")
			in := &inputs{config: &tc.config, status: &v1alpha1.ExposureStatus{}, source: SourceExposure}
			pool, err := w.a.validateAgainstNeutron(t.Context(), w.n, in)
			if tc.mentions == "" {
				if err != nil || pool != tc.wantPool {
					t.Errorf("got %v, pool %q; want none and pool %q", err, pool, tc.wantPool)
				}
				return
			}
			if !slices.Contains(v1beta1helper.ExtractErrorCodes(err), gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("got %v, want a configuration problem naming %q", err, tc.mentions)
			}
			if w.n.WriteCount() != 0 {
				t.Errorf("writes %v before the config was valid", w.n.Writes)
			}
		})
	}
}

func TestCleanupOpenStackRemovesTheFrontDoorAndRecordsIt(t *testing.T) {
	w := newWorld(t, "uid-self")
	w.mustReconcile(t)
	if err := w.a.patchStatus(t.Context(), w.exp, w.status); err != nil {
		t.Fatal(err)
	}
	status := w.status.DeepCopy()
	if err := w.a.cleanupOpenStack(t.Context(), logr.Discard(), w.exp, nil, w.n, status, false); err != nil {
		t.Fatal(err)
	}
	if len(w.n.Ports) != 0 || len(w.n.FloatingIPs) != 0 {
		t.Errorf("left %d ports and %d floating IPs", len(w.n.Ports), len(w.n.FloatingIPs))
	}
	stored, err := DecodeStatus(w.exp)
	if err != nil || stored.PortID != "" || stored.VIPAddress != "" || stored.FloatingIPID != "" {
		t.Errorf("recorded status %+v (%v), want the front door cleared", stored, err)
	}
}

func TestCleanupOpenStackKeepsTheFloatingIPPinnedInTheConfig(t *testing.T) {
	// The status may no longer say it was adopted; the config still names it.
	w := newWorld(t, "uid-self")
	w.mustReconcile(t)
	fip := w.n.FloatingIPs[w.status.FloatingIPID]
	w.exp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{` + header + `,"floatingIP":"` + fip.FloatingIP + `"}`)}
	status := w.status.DeepCopy()
	status.FloatingIPAdopted = false
	if err := w.a.cleanupOpenStack(t.Context(), logr.Discard(), w.exp, nil, w.n, status, false); err != nil {
		t.Fatal(err)
	}
	if kept, ok := w.n.FloatingIPs[fip.ID]; !ok || kept.PortID != "" {
		t.Errorf("the pinned floating IP %+v (kept %v), want it kept and disassociated", kept, ok)
	}
}
