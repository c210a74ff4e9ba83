// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
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
