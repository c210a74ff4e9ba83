// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// frontDoor is the FrontDoor world.reconcile hands to the service.
func (w *world) frontDoor() *FrontDoor {
	return &FrontDoor{UID: w.uid, Spec: w.spec, Mark: MarkOf(w.status, "c1", w.uid, &gardencorev1beta1.Shoot{Status: gardencorev1beta1.ShootStatus{UID: "shoot-a"}})}
}

// lostStatus forgets the status of a reconciled world, as a restored or recreated
// exposure object with the same UID would.
func (w *world) lostStatus() {
	w.status = &v1alpha1.ExposureStatus{}
}

func TestReconcileFloatingIPAdoptsThePinnedAddress(t *testing.T) {
	w := newWorld("uid-self", nil)
	pinned := w.n.AddFloatingIP(floatingips.FloatingIP{Description: "the user's"})
	w.spec.FloatingIP = pinned.FloatingIP
	w.mustReconcile(t)
	if w.status.FloatingIPID != pinned.ID || !w.status.FloatingIPAdopted || w.status.Ingress != pinned.FloatingIP {
		t.Fatalf("status %+v, want the pinned floating IP %s adopted and published", w.status, pinned.ID)
	}
	if fip, ok := w.n.FloatingIPs[pinned.ID]; !ok || len(w.n.FloatingIPs) != 1 || fip.PortID != w.status.PortID {
		t.Errorf("floating IPs %v; want only the pinned one, on the VIP port %s", w.n.FloatingIPs, w.status.PortID)
	}
	w.mustWriteNothing(t, "an adopted floating IP")

	// The user's address outlives the exposure, only disassociated.
	w.delete(t)
	if fip, ok := w.n.FloatingIPs[pinned.ID]; !ok || fip.PortID != "" {
		t.Errorf("after the deletion the pinned floating IP is %+v (kept %v), want it kept and disassociated", fip, ok)
	}
}

func TestReconcileFloatingIPRefusesAPinnedAddressItCannotTake(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(w *world) string
		code     gardencorev1beta1.ErrorCode
		mentions string
	}{
		{"not allocated in the project", func(*world) string { return "198.19.0.200" }, gardencorev1beta1.ErrorConfigurationProblem, "198.19.0.200"},
		{"associated with another port", func(w *world) string {
			return w.n.AddFloatingIP(floatingips.FloatingIP{PortID: "port-of-a-server"}).FloatingIP
		}, gardencorev1beta1.ErrorInfraDependencies, "port-of-a-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.spec.FloatingIP = tc.setup(w)
			fips := len(w.n.FloatingIPs)
			err := w.reconcile(t)
			if !hasCode(err, tc.code) || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("got %v, want %s naming %s", err, tc.code, tc.mentions)
			}
			if len(w.n.FloatingIPs) != fips || w.status.FloatingIPID != "" {
				t.Errorf("%d floating IPs (had %d), recorded %q: a refused pin must not allocate or record one", len(w.n.FloatingIPs), fips, w.status.FloatingIPID)
			}
		})
	}
}

func TestReconcileFloatingIPKeepsTheRecordedOne(t *testing.T) {
	t.Run("disassociated out of band, it is associated again", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		id := w.status.FloatingIPID
		if err := w.n.DisassociateFloatingIP(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		w.mustReconcile(t)
		if w.status.FloatingIPID != id || w.n.FloatingIPs[id].PortID != w.status.PortID || len(w.n.FloatingIPs) != 1 {
			t.Errorf("status %+v, floating IPs %d; want %s back on %s and no second one", w.status, len(w.n.FloatingIPs), id, w.status.PortID)
		}
	})
	t.Run("associated with another port out of band, it is not taken back", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		id := w.status.FloatingIPID
		w.n.FloatingIPs[id].PortID = "port-of-a-server"
		err := w.reconcile(t)
		if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) || !strings.Contains(err.Error(), "port-of-a-server") {
			t.Fatalf("got %v, want %s naming the other port", err, gardencorev1beta1.ErrorInfraDependencies)
		}
		if w.n.FloatingIPs[id].PortID != "port-of-a-server" {
			t.Errorf("the floating IP moved to %q", w.n.FloatingIPs[id].PortID)
		}
	})
	t.Run("deleted out of band with its address free, the same address is allocated again", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		old := *w.n.FloatingIPs[w.status.FloatingIPID]
		_ = w.n.DeleteFloatingIP(t.Context(), old.ID)
		w.mustReconcile(t)
		got := w.n.FloatingIPs[w.status.FloatingIPID]
		if got == nil || w.status.FloatingIPID == old.ID || got.FloatingIP != old.FloatingIP || got.Description != old.Description || got.PortID != w.status.PortID {
			t.Errorf("floating IP %+v, want a new one with %s and %q on %s", got, old.FloatingIP, old.Description, w.status.PortID)
		}
	})
	t.Run("deleted and allocated again with its mark on another port, it is not taken from that port", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		old := *w.n.FloatingIPs[w.status.FloatingIPID]
		_ = w.n.DeleteFloatingIP(t.Context(), old.ID)
		again := w.n.AddFloatingIP(floatingips.FloatingIP{FloatingIP: old.FloatingIP, Description: old.Description, PortID: "port-of-a-server"})
		err := w.reconcile(t)
		if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) || !strings.Contains(err.Error(), "port-of-a-server") {
			t.Fatalf("got %v, want %s naming the other port", err, gardencorev1beta1.ErrorInfraDependencies)
		}
		if w.n.FloatingIPs[again.ID].PortID != "port-of-a-server" {
			t.Errorf("the floating IP moved to %q", w.n.FloatingIPs[again.ID].PortID)
		}
	})
	t.Run("a pinned one deleted out of band is a configuration problem, not replaced", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		pinned := w.n.AddFloatingIP(floatingips.FloatingIP{})
		w.spec.FloatingIP = pinned.FloatingIP
		w.mustReconcile(t)
		_ = w.n.DeleteFloatingIP(t.Context(), pinned.ID)
		if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(err.Error(), pinned.FloatingIP) {
			t.Fatalf("got %v, want a configuration problem naming %s", err, pinned.FloatingIP)
		}
		if len(w.n.FloatingIPs) != 0 {
			t.Errorf("the extension allocated %v in place of the user's address", w.n.FloatingIPs)
		}
	})
	t.Run("deleted out of band and allocating the address again fails, the operator is told how to fix it", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		old := *w.n.FloatingIPs[w.status.FloatingIPID]
		_ = w.n.DeleteFloatingIP(t.Context(), old.ID)
		f := faulty(w.n)
		f.fail["CreateFloatingIP"] = neutronErr(403, "Forbidden", "create the floating IP")
		port := w.n.Ports[w.status.PortID]
		err := service(f, nil).ReconcileFloatingIP(t.Context(), w.frontDoor(), port, false, w.status)
		if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) || !strings.Contains(err.Error(), old.Description) || !strings.Contains(err.Error(), "injected Forbidden") {
			t.Fatalf("got %v, want %s naming the description %q and the cause", err, gardencorev1beta1.ErrorInfraDependencies, old.Description)
		}
		if w.status.FloatingIPAddress != old.FloatingIP {
			t.Errorf("the recorded address changed to %q", w.status.FloatingIPAddress)
		}
	})
}

func TestReconcileFloatingIPWithoutStatusNeverAllocatesASecond(t *testing.T) {
	t.Run("its own unassociated floating IP is associated again", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		id := w.status.FloatingIPID
		_ = w.n.DisassociateFloatingIP(t.Context(), id)
		w.lostStatus()
		w.mustReconcile(t)
		if w.status.FloatingIPID != id || w.n.FloatingIPs[id].PortID != w.status.PortID || len(w.n.FloatingIPs) != 1 {
			t.Errorf("status %+v with %d floating IPs, want %s back on the VIP port", w.status, len(w.n.FloatingIPs), id)
		}
	})
	t.Run("its own floating IP still on the VIP port is recorded as is", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		id := w.status.FloatingIPID
		w.lostStatus()
		writes := w.n.WriteCount()
		w.mustReconcile(t)
		if w.status.FloatingIPID != id || w.n.WriteCount() != writes {
			t.Errorf("recorded %q with writes %v, want %s without a write", w.status.FloatingIPID, w.n.Writes[writes:], id)
		}
	})
	t.Run("someone else's floating IP on the VIP port is disassociated, not released", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.mustReconcile(t)
		_ = w.n.DeleteFloatingIP(t.Context(), w.status.FloatingIPID)
		foreign := w.n.AddFloatingIP(floatingips.FloatingIP{Description: "someone's", PortID: w.status.PortID})
		w.lostStatus()
		w.mustReconcile(t)
		if fip, ok := w.n.FloatingIPs[foreign.ID]; !ok || fip.PortID != "" {
			t.Errorf("someone else's floating IP %+v (kept %v), want it kept and disassociated", fip, ok)
		}
		if w.status.FloatingIPID == foreign.ID || w.n.FloatingIPs[w.status.FloatingIPID].Description != w.frontDoor().Mark.Description() {
			t.Errorf("recorded %q, want a floating IP of the exposure's own", w.status.FloatingIPID)
		}
	})
}

func TestReconcileFloatingIPResolvesThePoolByName(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.spec.FloatingNetworkID, w.spec.FloatingPoolName = "", "public"
	w.mustReconcile(t)
	// The fake resolves every pool name to the network "ext".
	if fip := w.n.FloatingIPs[w.status.FloatingIPID]; fip == nil || fip.FloatingNetworkID != "ext" || w.status.FloatingNetworkID != "ext" {
		t.Fatalf("floating IP %+v, status network %q; want both in ext", fip, w.status.FloatingNetworkID)
	}
	w.mustWriteNothing(t, "a pool given by name")
}

func TestReconcileFloatingIPOfAnInternalExposureDoesNothing(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.spec.InternalOnly = true
	w.mustReconcile(t)
	port := w.n.Ports[w.status.PortID]
	writes := w.n.WriteCount()
	if err := service(w.n, nil).ReconcileFloatingIP(t.Context(), w.frontDoor(), port, false, w.status); err != nil {
		t.Fatal(err)
	}
	if len(w.n.FloatingIPs) != 0 || w.n.WriteCount() != writes || w.status.Ingress != w.status.VIPAddress {
		t.Errorf("floating IPs %v, writes %v, ingress %q; want none and the VIP %s published", w.n.FloatingIPs, w.n.Writes[writes:], w.status.Ingress, w.status.VIPAddress)
	}
}

func TestReconcileFloatingIPPassesNeutronErrorsOn(t *testing.T) {
	transient := neutronErr(503, "ServiceUnavailable", "injected")
	for _, call := range []string{"ListFloatingIPs", "FloatingIPsOfPort", "CreateFloatingIP"} {
		t.Run(call, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			port := w.n.Ports[w.status.PortID]
			_ = w.n.DeleteFloatingIP(t.Context(), w.status.FloatingIPID)
			w.lostStatus()
			f := faulty(w.n)
			f.fail[call] = transient
			err := service(f, nil).ReconcileFloatingIP(t.Context(), w.frontDoor(), port, false, w.status)
			if !openstack.IsTransient(err) || w.status.FloatingIPID != "" {
				t.Errorf("got %v, recorded %q; want the transient error and nothing recorded", err, w.status.FloatingIPID)
			}
		})
	}
}
