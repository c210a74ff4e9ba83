// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

func TestFloatingIPOwners(t *testing.T) {
	m := mark{identity: "c1", owner: "u1"}
	ours := m.description()
	legacy := mark{identity: "c1"}.description()
	other := mark{identity: "c1", owner: "u2"}.description()
	adopted := &v1alpha1.ExposureStatus{FloatingIPID: "f-pinned", FloatingIPAddress: "198.19.0.7", FloatingIPAdopted: true}
	for _, tc := range []struct {
		name   string
		owners floatingIPOwners
		fip    floatingips.FloatingIP
		want   floatingIPOwner
	}{
		{"allocated by the extension", floatingIPOwnersOf(m, &Config{}, &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", Description: ours}, floatingIPOurs},
		{"ours, pinned in the config", floatingIPOwnersOf(m, &Config{FloatingIP: "198.19.0.5"}, &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", Description: ours}, floatingIPPinned},
		{"ours, pinned earlier, config no longer names it", floatingIPOwnersOf(m, &Config{}, adopted), floatingips.FloatingIP{ID: "f-pinned", FloatingIP: "198.19.0.7", Description: ours}, floatingIPPinned},
		{"the user's, by address", floatingIPOwnersOf(m, nil, adopted), floatingips.FloatingIP{ID: "f-other-id", FloatingIP: "198.19.0.7", Description: "mine"}, floatingIPPinned},
		{"another owner's", floatingIPOwnersOf(m, &Config{}, &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: other}, floatingIPOfSomeoneElse},
		{"from before owners, seen by an owner", floatingIPOwnersOf(m, &Config{}, &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: legacy}, floatingIPOfSomeoneElse},
		{"by hand", floatingIPOwnersOf(m, &Config{}, &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: ""}, floatingIPOfSomeoneElse},
	} {
		if got := tc.owners.of(&tc.fip); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}

	// Fixed before the deletion clears the status: the pinned one stays pinned.
	status := adopted.DeepCopy()
	owners := floatingIPOwnersOf(m, &Config{}, status)
	clearFloatingIP(status)
	if got := owners.of(&floatingips.FloatingIP{ID: "f-pinned", FloatingIP: "198.19.0.7", Description: ours}); got != floatingIPPinned {
		t.Errorf("after the status was cleared: %d, want pinned", got)
	}
}

// exposureWith is an exposure object with a UID and, if owner is set, a recorded owner.
func exposureWith(name, uid, owner string) *extensionsv1alpha1.SelfHostedShootExposure {
	x := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID(uid)}}
	if owner != "" {
		x.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"owner":"` + owner + `"}`)}
	}
	return x
}

func portsActuator(t *testing.T, live ...*extensionsv1alpha1.SelfHostedShootExposure) *Actuator {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := extensionsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, x := range live {
		b = b.WithObjects(x)
	}
	return &Actuator{client: b.Build()}
}

func vipPort(id string, m mark, created time.Time, extra ...string) ports.Port {
	return ports.Port{ID: id, Name: vipPortName(m.identity), Tags: append(m.tags(), extra...), CreatedAt: created}
}

func TestOwnerOfPort(t *testing.T) {
	a := portsActuator(t, exposureWith("live", "uid-live", ""), exposureWith("moved", "uid-moved", "uid-recorded"))
	self := mark{identity: "c1", owner: "uid-self", shoot: "shoot-a"}
	owned := func(owner string) mark { return mark{identity: "c1", owner: owner} }
	shootA, shootB := openstack.ShootTag("shoot-a"), openstack.ShootTag("shoot-b")
	bound := vipPort("p", owned("uid-gone"), time.Time{}, shootA)
	bound.DeviceOwner = "compute:nova"
	for _, tc := range []struct {
		name string
		m    mark
		port ports.Port
		want portOwner
	}{
		{"our owner tag", self, vipPort("p", self, time.Time{}, shootA), portOurs},
		{"our own UID after a take-over", mark{identity: "c1", owner: "uid-lost", shoot: "shoot-a"}, vipPort("p", owned("uid-self"), time.Time{}), portOurs},
		{"no tags at all", self, ports.Port{ID: "p"}, portOurs},
		{"another live exposure's", self, vipPort("p", owned("uid-live"), time.Time{}, shootA), portOfLiveExposure},
		{"the recorded owner of a live exposure", self, vipPort("p", owned("uid-recorded"), time.Time{}, shootA), portOfLiveExposure},
		{"a lost exposure's of this Shoot", self, vipPort("p", owned("uid-gone"), time.Time{}, shootA), portOfLostExposure},
		{"a lost owner of another Shoot", self, vipPort("p", owned("uid-gone"), time.Time{}, shootB), portOfSomeoneElse},
		{"a lost owner without a shoot tag", self, vipPort("p", owned("uid-gone"), time.Time{}), portOfSomeoneElse},
		{"this cluster's Shoot unknown", mark{identity: "c1", owner: "uid-self"}, vipPort("p", owned("uid-gone"), time.Time{}, shootA), portOfSomeoneElse},
		{"bound", self, bound, portOfSomeoneElse},
		{"another cluster's tags", self, vipPort("p", mark{identity: "c2", owner: "uid-gone"}, time.Time{}, shootA), portOfSomeoneElse},
	} {
		got, _, _, err := a.ownerOfPort(context.Background(), tc.m, "uid-self", &tc.port)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestClaimFrontDoor(t *testing.T) {
	shootA := openstack.ShootTag("shoot-a")
	owned := func(owner string) mark { return mark{identity: "c1", owner: owner} }
	older, newer := time.Unix(1000, 0), time.Unix(2000, 0)

	a := portsActuator(t, exposureWith("live", "uid-live", ""))
	in := &inputs{mark: mark{identity: "c1", owner: "uid-self", shoot: "shoot-a"}}
	named := []ports.Port{
		vipPort("newer", owned("uid-gone-2"), newer, shootA),
		vipPort("older", owned("uid-gone-1"), older, shootA),
		vipPort("other-shoot", owned("uid-gone-3"), older.Add(-time.Hour), openstack.ShootTag("shoot-b")),
	}
	if err := a.claimFrontDoor(context.Background(), logr.Discard(), in, "uid-self", named); err != nil {
		t.Fatal(err)
	}
	if in.mark.owner != "uid-gone-1" {
		t.Errorf("owner %q after the claim, want the oldest lost port's owner uid-gone-1", in.mark.owner)
	}

	in = &inputs{mark: mark{identity: "c1", owner: "uid-self", shoot: "shoot-a"}}
	err := a.claimFrontDoor(context.Background(), logr.Discard(), in, "uid-self", append(named, vipPort("live", owned("uid-live"), newer, shootA)))
	if codes := v1beta1helper.ExtractErrorCodes(err); !slices.Contains(codes, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Errorf("with a live owner: %v, want a refusal with %s", err, gardencorev1beta1.ErrorConfigurationProblem)
	}
	if in.mark.owner != "uid-self" {
		t.Errorf("a refused exposure changed its owner to %q", in.mark.owner)
	}
}

// world is one exposure of cluster c1 (Shoot shoot-a) on the fake Neutron, with the
// exposures of its cluster in a fake kube-apiserver.
type world struct {
	a      *Actuator
	n      *fakeNeutron
	exp    *extensionsv1alpha1.SelfHostedShootExposure
	config Config
	status *v1alpha1.ExposureStatus
	// nodes are the control-plane Nodes the reconciliation sees.
	nodes []controlPlaneNode
}

func newWorld(t *testing.T, uid string, others ...*extensionsv1alpha1.SelfHostedShootExposure) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := extensionsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "kube-system", UID: types.UID(uid)}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(exp).WithStatusSubresource(exp)
	for _, x := range others {
		b = b.WithObjects(x)
	}
	c := b.Build()
	return &world{
		a:      &Actuator{client: c, reader: c},
		n:      newFakeNeutron(),
		exp:    exp,
		config: Config{NetworkID: "net", SubnetID: "sub", SubnetCIDR: "198.18.0.0/24", SubnetNetworkID: "net", FloatingNetworkID: "ext"},
		status: &v1alpha1.ExposureStatus{},
	}
}

// reconcile runs the OpenStack part of a reconciliation as Reconcile does: the
// immutability rule first, then the port, floating IP and pairs.
func (w *world) reconcile(t *testing.T) error {
	t.Helper()
	cfg := w.config
	if err := checkImmutable(&cfg, w.status); err != nil {
		return err
	}
	in := &inputs{status: w.status, identity: "c1", config: &cfg, uid: w.exp.UID, namespace: w.exp.Namespace, nodes: w.nodes,
		mark: markOf(w.status, "c1", w.exp.UID, &gardencorev1beta1.Shoot{Status: gardencorev1beta1.ShootStatus{UID: "shoot-a"}})}
	status, err := w.a.ensureOpenStack(context.Background(), logr.Discard(), w.n, in, w.status)
	if status != nil {
		w.status = status
	}
	if err == nil {
		w.status.Ingress = ingressOf(w.status, cfg.InternalOnly)
	}
	return err
}

func (w *world) delete(t *testing.T) {
	t.Helper()
	if err := w.a.cleanupOpenStack(context.Background(), logr.Discard(), w.exp, nil, w.n, w.status, false); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func (w *world) mustReconcile(t *testing.T) {
	t.Helper()
	if err := w.reconcile(t); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func hasCode(err error, code gardencorev1beta1.ErrorCode) bool {
	return slices.Contains(v1beta1helper.ExtractErrorCodes(err), code)
}

func TestRulesOnTheFakeNeutron(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a fresh exposure creates one port and one floating IP, then writes nothing", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			if len(w.n.ports) != 1 || len(w.n.fips) != 1 || w.status.Ingress != w.status.FloatingIPAddress || w.status.Owner != "uid-self" {
				t.Fatalf("ports %d, floating IPs %d, status %+v", len(w.n.ports), len(w.n.fips), w.status)
			}
			if p := w.n.ports[w.status.PortID]; !slices.Contains(p.Tags, openstack.ShootTag("shoot-a")) {
				t.Errorf("the VIP port's tags %v lack the shoot tag", p.Tags)
			}
			before := w.n.writeCount()
			w.mustReconcile(t)
			if got := w.n.writeCount() - before; got != 0 {
				t.Errorf("%d writes on an unchanged exposure: %v", got, w.n.writes[before:])
			}
		}},
		{"a change of subnet is refused before any call and keeps the VIP", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			vip, writes := w.status.VIPAddress, w.n.writeCount()
			w.config.SubnetID = "sub-2"
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Fatalf("got %v, want a configuration problem", err)
			}
			if w.status.VIPAddress != vip || w.n.writeCount() != writes {
				t.Errorf("VIP %s -> %s, %d writes", vip, w.status.VIPAddress, w.n.writeCount()-writes)
			}
		}},
		{"a lost exposure's front door of this Shoot is taken over", func(t *testing.T) {
			old := newWorld(t, "uid-old")
			old.mustReconcile(t)
			w := newWorld(t, "uid-self")
			w.n = old.n
			writes := w.n.writeCount()
			w.mustReconcile(t)
			if w.status.PortID != old.status.PortID || w.status.FloatingIPID != old.status.FloatingIPID || w.status.Ingress != old.status.Ingress || w.status.Owner != "uid-old" {
				t.Errorf("after the take-over %+v, want the lost exposure's %+v", w.status, old.status)
			}
			if got := w.n.writes[writes:]; len(got) != 0 {
				t.Errorf("writes during the take-over: %v", got)
			}
		}},
		{"a live exposure's front door refuses a second one, which writes nothing", func(t *testing.T) {
			first := newWorld(t, "uid-first")
			first.mustReconcile(t)
			w := newWorld(t, "uid-self", &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: "kube-system", UID: "uid-first"}})
			w.n = first.n
			writes := w.n.writeCount()
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if w.status.PortID != "" || w.n.writeCount() != writes {
				t.Errorf("the refused exposure recorded port %q and wrote %v", w.status.PortID, w.n.writes[writes:])
			}
		}},
		{"another cluster's port of the same name is left alone", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			other := mark{identity: "c1", owner: "uid-gone"}
			foreign := w.n.addPort(ports.Port{Name: vipPortName("c1"), NetworkID: "net", Tags: append(other.tags(), openstack.ShootTag("shoot-b")),
				FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.50"}}})
			w.mustReconcile(t)
			if w.status.PortID == foreign.ID || len(w.n.ports) != 2 || w.status.Owner != "uid-self" {
				t.Errorf("status %+v with %d ports, want an own port beside %s", w.status, len(w.n.ports), foreign.ID)
			}
		}},
		{"a deleted floating IP is replaced by one with its address and mark", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			old := *w.n.fips[w.status.FloatingIPID]
			_ = w.n.DeleteFloatingIP(ctx, old.ID)
			again := w.n.addFloatingIP(floatingips.FloatingIP{FloatingIP: old.FloatingIP, Description: old.Description})
			w.mustReconcile(t)
			if w.status.FloatingIPID != again.ID || w.n.fips[again.ID].PortID != w.status.PortID || w.status.Ingress != old.FloatingIP {
				t.Errorf("status %+v, want %s on the VIP port", w.status, again.ID)
			}
		}},
		{"a deleted floating IP whose address someone else holds is an infrastructure dependency", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			old := *w.n.fips[w.status.FloatingIPID]
			_ = w.n.DeleteFloatingIP(ctx, old.ID)
			w.n.addFloatingIP(floatingips.FloatingIP{FloatingIP: old.FloatingIP, Description: "someone's"})
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) {
				t.Fatalf("got %v, want %s", err, gardencorev1beta1.ErrorInfraDependencies)
			}
		}},
		{"a lost port whose VIP another port took is an infrastructure dependency, the VIP kept", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			vip := w.status.VIPAddress
			_ = w.n.DeletePort(ctx, w.status.PortID)
			w.n.addPort(ports.Port{Name: "someone", NetworkID: "net", DeviceOwner: "compute:nova", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: vip}}})
			err := w.reconcile(t)
			if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) {
				t.Fatalf("got %v, want %s", err, gardencorev1beta1.ErrorInfraDependencies)
			}
			if w.status.VIPAddress != vip {
				t.Errorf("VIP %s -> %s", vip, w.status.VIPAddress)
			}
		}},
		{"a pinned floating IP survives the deletion, disassociated", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			w.config.FloatingIP = w.status.FloatingIPAddress
			w.mustReconcile(t)
			if !w.status.FloatingIPAdopted {
				t.Fatalf("pinning the current address: %+v", w.status)
			}
			id := w.status.FloatingIPID
			w.delete(t)
			if fip, ok := w.n.fips[id]; !ok || fip.PortID != "" || len(w.n.ports) != 0 {
				t.Errorf("after the deletion: floating IP %v (kept %v), %d ports", fip, ok, len(w.n.ports))
			}
		}},
		{"the extension's floating IP is released, someone else's only disassociated", func(t *testing.T) {
			w := newWorld(t, "uid-self")
			w.mustReconcile(t)
			ours := w.status.FloatingIPID
			foreign := w.n.addFloatingIP(floatingips.FloatingIP{Description: "someone's", PortID: w.status.PortID})
			w.delete(t)
			if _, ok := w.n.fips[ours]; ok {
				t.Errorf("the extension's floating IP %s was kept", ours)
			}
			if fip, ok := w.n.fips[foreign.ID]; !ok || fip.PortID != "" || len(w.n.fips) != 1 {
				t.Errorf("someone else's floating IP: %v (kept %v), %d floating IPs left", fip, ok, len(w.n.fips))
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
