// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/types"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

func TestFloatingIPOwners(t *testing.T) {
	m := Mark{Identity: "c1", Owner: "u1"}
	ours := m.Description()
	legacy := Mark{Identity: "c1"}.Description()
	other := Mark{Identity: "c1", Owner: "u2"}.Description()
	adopted := &v1alpha1.ExposureStatus{FloatingIPID: "f-pinned", FloatingIPAddress: "198.19.0.7", FloatingIPAdopted: true}
	for _, tc := range []struct {
		name   string
		owners FloatingIPOwners
		fip    floatingips.FloatingIP
		want   FloatingIPOwner
	}{
		{"allocated by the extension", FloatingIPOwnersOf(m, "", &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", Description: ours}, FloatingIPOurs},
		{"ours, pinned in the config", FloatingIPOwnersOf(m, "198.19.0.5", &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", Description: ours}, FloatingIPPinned},
		{"ours, pinned earlier, config no longer names it", FloatingIPOwnersOf(m, "", adopted), floatingips.FloatingIP{ID: "f-pinned", FloatingIP: "198.19.0.7", Description: ours}, FloatingIPPinned},
		{"the user's, by address", FloatingIPOwnersOf(m, "", adopted), floatingips.FloatingIP{ID: "f-other-id", FloatingIP: "198.19.0.7", Description: "mine"}, FloatingIPPinned},
		{"another owner's", FloatingIPOwnersOf(m, "", &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: other}, FloatingIPOfSomeoneElse},
		{"from before owners, seen by an owner", FloatingIPOwnersOf(m, "", &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: legacy}, FloatingIPOfSomeoneElse},
		{"by hand", FloatingIPOwnersOf(m, "", &v1alpha1.ExposureStatus{}), floatingips.FloatingIP{ID: "f", Description: ""}, FloatingIPOfSomeoneElse},
	} {
		if got := tc.owners.Of(&tc.fip); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}

	// Fixed before the deletion clears the status: the pinned one stays pinned.
	status := adopted.DeepCopy()
	owners := FloatingIPOwnersOf(m, "", status)
	clearFloatingIP(status)
	if got := owners.Of(&floatingips.FloatingIP{ID: "f-pinned", FloatingIP: "198.19.0.7", Description: ours}); got != FloatingIPPinned {
		t.Errorf("after the status was cleared: %d, want pinned", got)
	}
}

// service is a Service on the fake Neutron that sees the exposures of live (UID or
// recorded owner to namespace/name) as live.
func service(n Neutron, live map[string]string) *Service {
	return NewService(n, Options{Log: logr.Discard(), ExposureOwning: func(_ context.Context, uid string) (string, error) { return live[uid], nil }})
}

func vipPort(id string, m Mark, created time.Time, extra ...string) ports.Port {
	return ports.Port{ID: id, Name: VIPPortName(m.Identity), Tags: append(m.Tags(), extra...), CreatedAt: created,
		NetworkID: "net", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.50"}}}
}

func TestClassifyPort(t *testing.T) {
	self := Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a", Namespace: "ns-a"}
	owned := func(owner string) Mark { return Mark{Identity: "c1", Owner: owner} }
	shootA, shootB := openstack.ShootTag("shoot-a"), openstack.ShootTag("shoot-b")
	nsA, nsB := openstack.NamespaceTag("ns-a"), openstack.NamespaceTag("ns-b")
	bind := func(p ports.Port) ports.Port { p.DeviceOwner = "compute:nova"; return p }
	in := func(network string, p ports.Port) ports.Port { p.NetworkID = network; return p }
	untagged := ports.Port{ID: "p", NetworkID: "net", Description: self.Description()}
	exposure := portView{mark: self, self: "uid-self", networkID: "net"}
	recorded := portView{mark: self, networkID: "net", recordedPortID: "p"}
	for _, tc := range []struct {
		name string
		view portView
		port ports.Port
		want portClass
	}{
		{"with the mark's tags", exposure, vipPort("p", self, time.Time{}, shootA), classOurs},
		{"with the mark's tags in another network", exposure, in("net-2", vipPort("p", self, time.Time{})), classOurs},
		{"with the mark's tags, bound", exposure, bind(vipPort("p", self, time.Time{})), classTaken},
		{"untagged in the network", exposure, untagged, classOursUntagged},
		{"untagged in another network", exposure, in("net-2", untagged), classUnmarked},
		{"untagged, nowhere known", portView{mark: self}, untagged, classUnmarked},
		{"untagged, bound", exposure, bind(untagged), classSomeoneElse},
		{"untagged with another owner's description", exposure, ports.Port{ID: "p", NetworkID: "net", Description: owned("uid-x").Description()}, classOtherOwner},
		{"from before owners, seen by an owner", exposure, vipPort("p", Mark{Identity: "c1"}, time.Time{}), classUnmarked},
		{"another cluster's tags without an owner", exposure, vipPort("p", Mark{Identity: "c2"}, time.Time{}), classUnmarked},
		{"the exposure's own UID after a take-over", portView{mark: owned("uid-lost"), self: "uid-self", networkID: "net"}, vipPort("p", owned("uid-lost"), time.Time{}, openstack.OwnerTag("uid-self")), classOurs},
		{"the exposure's own UID, judged by the mark alone", portView{mark: owned("uid-lost"), networkID: "net"}, vipPort("p", owned("uid-self"), time.Time{}), classOtherOwner},
		{"another owner of this Shoot and Namespace", exposure, vipPort("p", owned("uid-x"), time.Time{}, shootA, nsA), classOtherExposure},
		{"another owner of this Shoot, tagged before the namespace tag", exposure, vipPort("p", owned("uid-x"), time.Time{}, shootA), classOtherExposure},
		{"another owner of this Shoot in another Namespace", exposure, vipPort("p", owned("uid-x"), time.Time{}, shootA, nsB), classOtherOwner},
		{"another owner of another Shoot", exposure, vipPort("p", owned("uid-x"), time.Time{}, shootB), classOtherOwner},
		{"another owner, bound", exposure, bind(vipPort("p", owned("uid-x"), time.Time{}, shootA, nsA)), classSomeoneElse},
		{"another owner with another cluster's tags", exposure, vipPort("p", Mark{Identity: "c2", Owner: "uid-x"}, time.Time{}, shootA), classSomeoneElse},
		{"recorded", recorded, vipPort("p", self, time.Time{}), classRecorded},
		{"recorded, with another owner", recorded, vipPort("p", owned("uid-x"), time.Time{}), classRecorded},
		{"recorded, bound", recorded, bind(ports.Port{ID: "p"}), classTaken},
		{"not the recorded one, bound", recorded, bind(ports.Port{ID: "q"}), classSomeoneElse},
	} {
		if got := classifyPort(tc.view, &tc.port); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOwnerOfPort(t *testing.T) {
	svc := service(networkingtest.NewNeutron(), map[string]string{"uid-live": "kube-system/live", "uid-moved": "kube-system/moved", "uid-recorded": "kube-system/moved"})
	self := Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a", Namespace: "ns-a"}
	owned := func(owner string) Mark { return Mark{Identity: "c1", Owner: owner} }
	shootA, shootB := openstack.ShootTag("shoot-a"), openstack.ShootTag("shoot-b")
	nsA, nsB := openstack.NamespaceTag("ns-a"), openstack.NamespaceTag("ns-b")
	bound := vipPort("p", owned("uid-gone"), time.Time{}, shootA)
	bound.DeviceOwner = "compute:nova"
	for _, tc := range []struct {
		name string
		m    Mark
		port ports.Port
		want PortOwner
	}{
		{"our owner tag", self, vipPort("p", self, time.Time{}, shootA), PortOurs},
		{"our own UID after a take-over", Mark{Identity: "c1", Owner: "uid-lost", Shoot: "shoot-a"}, vipPort("p", owned("uid-self"), time.Time{}), PortOurs},
		{"no tags at all", self, ports.Port{ID: "p"}, PortOurs},
		{"another live exposure's", self, vipPort("p", owned("uid-live"), time.Time{}, shootA), PortOfLiveExposure},
		{"the recorded owner of a live exposure", self, vipPort("p", owned("uid-recorded"), time.Time{}, shootA), PortOfLiveExposure},
		{"a lost exposure's of this Shoot and Namespace", self, vipPort("p", owned("uid-gone"), time.Time{}, shootA, nsA), PortOfLostExposure},
		{"a lost exposure's of this Shoot, tagged before the namespace tag", self, vipPort("p", owned("uid-gone"), time.Time{}, shootA), PortOfLostExposure},
		// A clone that carries the Shoot's UID (a copied disk) has a Namespace of its own.
		{"a lost owner of this Shoot's UID in another cluster's Namespace", self, vipPort("p", owned("uid-gone"), time.Time{}, shootA, nsB), PortOfSomeoneElse},
		{"a lost owner of another Shoot", self, vipPort("p", owned("uid-gone"), time.Time{}, shootB), PortOfSomeoneElse},
		{"a lost owner without a shoot tag", self, vipPort("p", owned("uid-gone"), time.Time{}), PortOfSomeoneElse},
		{"this cluster's Shoot unknown", Mark{Identity: "c1", Owner: "uid-self"}, vipPort("p", owned("uid-gone"), time.Time{}, shootA), PortOfSomeoneElse},
		{"bound", self, bound, PortOfSomeoneElse},
		{"another cluster's tags", self, vipPort("p", Mark{Identity: "c2", Owner: "uid-gone"}, time.Time{}, shootA), PortOfSomeoneElse},
	} {
		got, _, _, err := svc.OwnerOfPort(context.Background(), tc.m, "uid-self", &tc.port)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestClaimFrontDoor(t *testing.T) {
	shootA := openstack.ShootTag("shoot-a")
	owned := func(owner string) Mark { return Mark{Identity: "c1", Owner: owner} }
	older, newer := time.Unix(1000, 0), time.Unix(2000, 0)

	svc := service(networkingtest.NewNeutron(), map[string]string{"uid-live": "kube-system/live"})
	fd := &FrontDoor{Spec: Spec{NetworkID: "net", SubnetID: "sub"}, Mark: Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a"}}
	named := []ports.Port{
		vipPort("newer", owned("uid-gone-2"), newer, shootA),
		vipPort("older", owned("uid-gone-1"), older, shootA),
		vipPort("other-shoot", owned("uid-gone-3"), older.Add(-time.Hour), openstack.ShootTag("shoot-b")),
	}
	if err := svc.claimFrontDoor(context.Background(), fd, "uid-self", named, &v1alpha1.ExposureStatus{}); err != nil {
		t.Fatal(err)
	}
	if fd.Mark.Owner != "uid-gone-1" {
		t.Errorf("owner %q after the claim, want the oldest lost port's owner uid-gone-1", fd.Mark.Owner)
	}

	fd = &FrontDoor{Spec: Spec{NetworkID: "net", SubnetID: "sub"}, Mark: Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a"}}
	err := svc.claimFrontDoor(context.Background(), fd, "uid-self", append(named, vipPort("live", owned("uid-live"), newer, shootA)), &v1alpha1.ExposureStatus{})
	if codes := v1beta1helper.ExtractErrorCodes(err); !slices.Contains(codes, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Errorf("with a live owner: %v, want a refusal with %s", err, gardencorev1beta1.ErrorConfigurationProblem)
	}
	if fd.Mark.Owner != "uid-self" {
		t.Errorf("a refused exposure changed its owner to %q", fd.Mark.Owner)
	}
}

// world is one exposure of cluster c1 (Shoot shoot-a) on the fake Neutron; live are the
// other exposures of its cluster.
type world struct {
	n      *networkingtest.Neutron
	uid    types.UID
	live   map[string]string
	spec   Spec
	status *v1alpha1.ExposureStatus
	nodes  []Node
}

func newWorld(uid string, live map[string]string) *world {
	return &world{
		n:      networkingtest.NewNeutron(),
		uid:    types.UID(uid),
		live:   live,
		spec:   Spec{NetworkID: "net", SubnetID: "sub", FloatingNetworkID: "ext"},
		status: &v1alpha1.ExposureStatus{},
	}
}

// reconcile runs the service as the actuator does: the immutability rule first, then the
// port, the floating IP and the pairs.
func (w *world) reconcile(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	if err := CheckImmutable(&w.spec, w.status); err != nil {
		return err
	}
	svc := service(w.n, w.live)
	fd := &FrontDoor{UID: w.uid, Spec: w.spec, Mark: MarkOf(w.status, "c1", w.uid, &gardencorev1beta1.Shoot{Status: gardencorev1beta1.ShootStatus{UID: "shoot-a"}})}
	w.status.NetworkID, w.status.SubnetID = w.spec.NetworkID, w.spec.SubnetID
	port, created, err := svc.GetOrCreateVIPPort(ctx, fd, w.status)
	if err != nil {
		return err
	}
	if !w.spec.InternalOnly {
		if err := svc.ReconcileFloatingIP(ctx, fd, port, created, w.status); err != nil {
			return err
		}
	}
	var others []string
	for _, v := range w.status.OtherVIPs {
		others = append(others, v.Address)
	}
	nodePorts, err := svc.ReconcilePairs(ctx, Pairs{NetworkID: w.status.NetworkID, VIP: w.status.VIPAddress, OtherVIPs: others, VIPPortID: port.ID, Nodes: w.nodes, Managed: portIDs(w.status.NodePorts)})
	w.status.NodePorts = nodePorts
	if err == nil && w.status.Ingress == "" {
		w.status.Ingress = w.status.FloatingIPAddress
		if w.spec.InternalOnly {
			w.status.Ingress = w.status.VIPAddress
		}
	}
	return err
}

func portIDs(nps []v1alpha1.NodePort) []string {
	var ids []string
	for _, np := range nps {
		ids = append(ids, np.PortID)
	}
	return ids
}

func (w *world) delete(t *testing.T) {
	t.Helper()
	d := Deletion{Mark: MarkOf(w.status, "c1", w.uid, nil), PinnedAddress: w.spec.FloatingIP}
	if err := service(w.n, w.live).DeleteFrontDoor(context.Background(), d, w.status); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func (w *world) mustReconcile(t *testing.T) {
	t.Helper()
	if err := w.reconcile(t); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

// mustWriteNothing reconciles again and fails if that wrote to Neutron: what names the
// state that should already be what the spec asks for.
func (w *world) mustWriteNothing(t *testing.T, what string) {
	t.Helper()
	before := w.n.WriteCount()
	w.mustReconcile(t)
	if got := w.n.WriteCount() - before; got != 0 {
		t.Errorf("%d writes on %s: %v", got, what, w.n.Writes[before:])
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
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			if len(w.n.Ports) != 1 || len(w.n.FloatingIPs) != 1 || w.status.Ingress != w.status.FloatingIPAddress || w.status.Owner != "uid-self" {
				t.Fatalf("ports %d, floating IPs %d, status %+v", len(w.n.Ports), len(w.n.FloatingIPs), w.status)
			}
			if p := w.n.Ports[w.status.PortID]; !slices.Contains(p.Tags, openstack.ShootTag("shoot-a")) {
				t.Errorf("the VIP port's tags %v lack the shoot tag", p.Tags)
			}
			w.mustWriteNothing(t, "an unchanged exposure")
		}},
		{"a change of subnet is refused before any call and keeps the VIP", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			vip, writes := w.status.VIPAddress, w.n.WriteCount()
			w.spec.SubnetID = "sub-2"
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Fatalf("got %v, want a configuration problem", err)
			}
			if w.status.VIPAddress != vip || w.n.WriteCount() != writes {
				t.Errorf("VIP %s -> %s, %d writes", vip, w.status.VIPAddress, w.n.WriteCount()-writes)
			}
		}},
		{"a lost exposure's front door of this Shoot is taken over", func(t *testing.T) {
			old := newWorld("uid-old", nil)
			old.mustReconcile(t)
			w := newWorld("uid-self", nil)
			w.n = old.n
			writes := w.n.WriteCount()
			w.mustReconcile(t)
			if w.status.PortID != old.status.PortID || w.status.FloatingIPID != old.status.FloatingIPID || w.status.Ingress != old.status.Ingress || w.status.Owner != "uid-old" {
				t.Errorf("after the take-over %+v, want the lost exposure's %+v", w.status, old.status)
			}
			if got := w.n.Writes[writes:]; len(got) != 0 {
				t.Errorf("writes during the take-over: %v", got)
			}
		}},
		{"a lost front door of this Shoot on another network is left alone", func(t *testing.T) {
			// A clone of the cluster (same project, shoot name and Shoot UID, e.g. from a
			// copied disk) on a network of its own.
			old := newWorld("uid-old", nil)
			old.mustReconcile(t)
			w := newWorld("uid-clone", nil)
			w.n = old.n
			w.spec.NetworkID, w.spec.SubnetID = "net-clone", "sub-clone"
			w.mustReconcile(t)
			if w.status.PortID == old.status.PortID || w.status.Owner != "uid-clone" || w.status.FloatingIPID == old.status.FloatingIPID {
				t.Fatalf("the clone's status %+v, want its own door beside %s (owner uid-old)", w.status, old.status.PortID)
			}
			w.delete(t)
			if _, ok := w.n.Ports[old.status.PortID]; !ok {
				t.Error("deleting the clone deleted the first cluster's VIP port")
			}
			if _, ok := w.n.FloatingIPs[old.status.FloatingIPID]; !ok {
				t.Error("deleting the clone deleted the first cluster's floating IP")
			}
		}},
		{"a live exposure's front door refuses a second one, which writes nothing", func(t *testing.T) {
			first := newWorld("uid-first", nil)
			first.mustReconcile(t)
			w := newWorld("uid-self", map[string]string{"uid-first": "kube-system/first"})
			w.n = first.n
			writes := w.n.WriteCount()
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if w.status.PortID != "" || w.n.WriteCount() != writes {
				t.Errorf("the refused exposure recorded port %q and wrote %v", w.status.PortID, w.n.Writes[writes:])
			}
		}},
		{"another cluster's port of the same name is left alone", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			other := Mark{Identity: "c1", Owner: "uid-gone"}
			foreign := w.n.AddPort(ports.Port{Name: VIPPortName("c1"), NetworkID: "net", Tags: append(other.Tags(), openstack.ShootTag("shoot-b")),
				FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.50"}}})
			w.mustReconcile(t)
			if w.status.PortID == foreign.ID || len(w.n.Ports) != 2 || w.status.Owner != "uid-self" {
				t.Errorf("status %+v with %d ports, want an own port beside %s", w.status, len(w.n.Ports), foreign.ID)
			}
		}},
		{"a deleted floating IP is replaced by one with its address and mark", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			old := *w.n.FloatingIPs[w.status.FloatingIPID]
			_ = w.n.DeleteFloatingIP(ctx, old.ID)
			again := w.n.AddFloatingIP(floatingips.FloatingIP{FloatingIP: old.FloatingIP, Description: old.Description})
			w.mustReconcile(t)
			if w.status.FloatingIPID != again.ID || w.n.FloatingIPs[again.ID].PortID != w.status.PortID || w.status.Ingress != old.FloatingIP {
				t.Errorf("status %+v, want %s on the VIP port", w.status, again.ID)
			}
		}},
		{"a deleted floating IP whose address someone else holds is an infrastructure dependency", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			old := *w.n.FloatingIPs[w.status.FloatingIPID]
			_ = w.n.DeleteFloatingIP(ctx, old.ID)
			w.n.AddFloatingIP(floatingips.FloatingIP{FloatingIP: old.FloatingIP, Description: "someone's"})
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) {
				t.Fatalf("got %v, want %s", err, gardencorev1beta1.ErrorInfraDependencies)
			}
		}},
		{"a lost port whose VIP another port took is an infrastructure dependency, the VIP kept", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			vip := w.status.VIPAddress
			_ = w.n.DeletePort(ctx, w.status.PortID)
			holder := w.n.AddPort(ports.Port{Name: "someone", NetworkID: "net", DeviceOwner: "compute:nova", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: vip}}})
			err := w.reconcile(t)
			if !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) {
				t.Fatalf("got %v, want %s", err, gardencorev1beta1.ErrorInfraDependencies)
			}
			if w.status.VIPAddress != vip || w.status.VIPHeldBy != holder.ID {
				t.Errorf("VIP %s -> %s, held by %q; want the VIP kept and held by %s", vip, w.status.VIPAddress, w.status.VIPHeldBy, holder.ID)
			}
			_ = w.n.DeletePort(ctx, holder.ID)
			w.mustReconcile(t)
			if w.status.VIPAddress != vip || w.status.VIPHeldBy != "" {
				t.Errorf("once the address is free: VIP %s, held by %q; want %s held by the VIP port again", w.status.VIPAddress, w.status.VIPHeldBy, vip)
			}
		}},
		{"a pinned floating IP survives the deletion, disassociated", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			w.spec.FloatingIP = w.status.FloatingIPAddress
			w.mustReconcile(t)
			if !w.status.FloatingIPAdopted {
				t.Fatalf("pinning the current address: %+v", w.status)
			}
			id := w.status.FloatingIPID
			w.delete(t)
			if fip, ok := w.n.FloatingIPs[id]; !ok || fip.PortID != "" || len(w.n.Ports) != 0 {
				t.Errorf("after the deletion: floating IP %v (kept %v), %d ports", fip, ok, len(w.n.Ports))
			}
		}},
		{"the extension's floating IP is released, someone else's only disassociated", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			ours := w.status.FloatingIPID
			foreign := w.n.AddFloatingIP(floatingips.FloatingIP{Description: "someone's", PortID: w.status.PortID})
			w.delete(t)
			if _, ok := w.n.FloatingIPs[ours]; ok {
				t.Errorf("the extension's floating IP %s was kept", ours)
			}
			if fip, ok := w.n.FloatingIPs[foreign.ID]; !ok || fip.PortID != "" || len(w.n.FloatingIPs) != 1 {
				t.Errorf("someone else's floating IP: %v (kept %v), %d floating IPs left", fip, ok, len(w.n.FloatingIPs))
			}
		}},
		{"the deletion removes the VIP pair from the node ports only, a bystander's stays", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			node := w.n.AddPort(ports.Port{Name: "cp-0", NetworkID: "net", MACAddress: "fa:16:3e:00:00:01", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.21"}}})
			w.nodes = []Node{{Name: "cp-0", IP: "198.18.0.21"}}
			w.mustReconcile(t)
			vip := w.status.VIPAddress
			bystander := w.n.AddPort(ports.Port{Name: "someone", NetworkID: "net", MACAddress: "fa:16:3e:00:00:02",
				FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.22"}}, AllowedAddressPairs: []ports.AddressPair{{IPAddress: vip}}})
			w.delete(t)
			if openstack.HasPair(w.n.Ports[node.ID], vip) {
				t.Error("the node port kept the VIP pair")
			}
			if !openstack.HasPair(w.n.Ports[bystander.ID], vip) {
				t.Error("the deletion removed the bystander's VIP pair")
			}
		}},
		{"a recorded VIP port bound to a device is neither deleted nor robbed of its floating IP", func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			port, fip := w.status.PortID, w.status.FloatingIPID
			w.n.Ports[port].DeviceOwner, w.n.Ports[port].DeviceID = "compute:nova", "server-1"
			w.delete(t)
			if _, ok := w.n.Ports[port]; !ok {
				t.Error("the bound VIP port was deleted")
			}
			if f, ok := w.n.FloatingIPs[fip]; !ok || f.PortID != port {
				t.Errorf("the bound port's floating IP: %+v (kept %v), want it kept on %s", f, ok, port)
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
