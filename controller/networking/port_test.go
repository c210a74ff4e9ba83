// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// selfMark is the mark world.reconcile gives a fresh exposure uid-self.
var selfMark = Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a"}

// twoOwnPorts puts two VIP ports of uid-self into a fresh world, as a create whose
// response was lost and that committed after the retry had created another would.
func twoOwnPorts(w *world) (older, newer *ports.Port) {
	at := time.Unix(1000, 0)
	mk := func(id, ip string, created time.Time) *ports.Port {
		p := vipPort(id, selfMark, created, openstack.ShootTag("shoot-a"))
		p.FixedIPs[0].IPAddress = ip
		return w.n.AddPort(p)
	}
	return mk("vip-older", "198.18.0.50", at), mk("vip-newer", "198.18.0.51", at.Add(time.Minute))
}

func TestGetOrCreateVIPPortDeletesASurplusPortOfTheCluster(t *testing.T) {
	w := newWorld("uid-self", nil)
	older, newer := twoOwnPorts(w)
	w.mustReconcile(t)
	if w.status.PortID != older.ID || w.status.VIPAddress != "198.18.0.50" {
		t.Errorf("status %+v, want the older port %s and its VIP", w.status, older.ID)
	}
	if _, ok := w.n.Ports[newer.ID]; ok {
		t.Errorf("the surplus port %s was kept", newer.ID)
	}
}

func TestGetOrCreateVIPPortKeepsASurplusPortWithAFloatingIP(t *testing.T) {
	w := newWorld("uid-self", nil)
	older, newer := twoOwnPorts(w)
	fip := w.n.AddFloatingIP(floatingips.FloatingIP{PortID: newer.ID})
	err := w.reconcile(t)
	// Someone may reach the cluster through that floating IP: an operator decides.
	if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) || !strings.Contains(err.Error(), newer.ID) || !strings.Contains(err.Error(), fip.FloatingIP) {
		t.Fatalf("got %v, want %s naming port %s and floating IP %s", err, gardencorev1beta1.ErrorInfraDependencies, newer.ID, fip.FloatingIP)
	}
	if _, ok := w.n.Ports[newer.ID]; !ok {
		t.Error("the surplus port with a floating IP was deleted")
	}
	if w.status.PortID != older.ID {
		t.Errorf("recorded port %q, want %s recorded despite the error", w.status.PortID, older.ID)
	}
}

func TestGetOrCreateVIPPortPrefersThePortHoldingTheRecordedVIP(t *testing.T) {
	w := newWorld("uid-self", nil)
	_, newer := twoOwnPorts(w)
	// The status lost the port's ID but still holds its VIP (e.g. the ID was cleared by hand).
	w.status.VIPAddress = "198.18.0.51"
	w.mustReconcile(t)
	if w.status.PortID != newer.ID {
		t.Errorf("recorded port %q, want %s which holds the recorded VIP", w.status.PortID, newer.ID)
	}
}

func TestGetOrCreateVIPPortRestoresTheClusterTags(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.mustReconcile(t)
	port := w.n.Ports[w.status.PortID]
	want := slices.Clone(port.Tags)
	port.Tags = []string{"added-by-someone"}
	w.mustReconcile(t)
	got := w.n.Ports[w.status.PortID].Tags
	if !openstack.HasAllTags(got, want) || !slices.Contains(got, "added-by-someone") {
		t.Errorf("tags %v, want the cluster's %v and the one added by someone", got, want)
	}
	w.mustWriteNothing(t, "restored tags")
}

func TestGetOrCreateVIPPortFindsARenamedRecordedPort(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.mustReconcile(t)
	id := w.status.PortID
	w.n.Ports[id].Name = "renamed-by-someone"
	w.mustWriteNothing(t, "a renamed VIP port")
	if w.status.PortID != id || len(w.n.Ports) != 1 {
		t.Errorf("recorded %q with %d ports, want %s kept", w.status.PortID, len(w.n.Ports), id)
	}
}

func TestGetOrCreateVIPPortExplainsATakenVIPAddress(t *testing.T) {
	w := newWorld("uid-self", nil)
	holder := w.n.AddPort(ports.Port{Name: "a-server", NetworkID: "net", DeviceOwner: "compute:nova",
		FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.77"}}})
	w.spec.VIPAddress = "198.18.0.77"
	err := w.reconcile(t)
	if !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(err.Error(), holder.ID) || !strings.Contains(err.Error(), "vipAddress") {
		t.Fatalf("got %v, want a configuration problem naming vipAddress and port %s", err, holder.ID)
	}
	if w.status.PortID != "" || len(w.n.Ports) != 1 {
		t.Errorf("recorded %q with %d ports after the refusal", w.status.PortID, len(w.n.Ports))
	}
}

// lateCommit is a Neutron whose first create of a VIP port commits, but answers as if
// the address were taken: the retry of a create whose response was lost.
type lateCommit struct {
	*faultyNeutron
}

func (l lateCommit) CreateVIPPort(ctx context.Context, spec openstack.VIPPortSpec) (*ports.Port, error) {
	if _, err := l.Neutron.CreateVIPPort(ctx, spec); err != nil {
		return nil, err
	}
	return l.Neutron.CreateVIPPort(ctx, spec)
}

func TestGetOrCreateVIPPortTreatsItsOwnLateCreateAsTransient(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.spec.VIPAddress = "198.18.0.77"
	fd := w.frontDoor()
	_, _, err := service(lateCommit{faulty(w.n)}, nil).GetOrCreateVIPPort(t.Context(), fd, w.status)
	if !openstack.IsTransient(err) || hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Fatalf("got %v, want a transient error without a configuration problem", err)
	}
	// The retry picks the committed port up instead of creating a second one.
	w.mustReconcile(t)
	if len(w.n.Ports) != 1 || w.status.VIPAddress != "198.18.0.77" {
		t.Errorf("%d ports, VIP %q after the retry; want the one port with 198.18.0.77", len(w.n.Ports), w.status.VIPAddress)
	}
}

func TestGetOrCreateVIPPortStopsOnNeutronErrors(t *testing.T) {
	transient := neutronErr(503, "ServiceUnavailable", "injected")
	for _, tc := range []struct {
		name string
		call string
		// reconciled: the exposure has its port already.
		reconciled bool
	}{
		{"listing the ports by name fails", "ListPorts", false},
		{"reading the renamed recorded port fails", "GetPort", true},
		{"tagging the port fails", "ReplacePortTags", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			if tc.reconciled {
				w.mustReconcile(t)
				port := w.n.Ports[w.status.PortID]
				port.Name, port.Tags = "renamed", nil
			}
			f := faulty(w.n)
			f.fail[tc.call] = transient
			before := w.status.PortID
			_, _, err := service(f, nil).GetOrCreateVIPPort(t.Context(), w.frontDoor(), w.status)
			if !openstack.IsTransient(err) {
				t.Errorf("got %v, want the transient error", err)
			}
			// Nothing created beside the port the exposure had, and it stays recorded.
			wantPorts := 0
			if tc.reconciled {
				wantPorts = 1
			}
			if w.status.PortID != before || len(w.n.Ports) != wantPorts {
				t.Errorf("recorded port %q -> %q, %d ports", before, w.status.PortID, len(w.n.Ports))
			}
		})
	}
}
