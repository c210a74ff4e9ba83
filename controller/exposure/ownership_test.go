// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

func TestChangesThatMoveTheFrontDoorAreRefused(t *testing.T) {
	public := &v1alpha1.ExposureStatus{NetworkID: "n", SubnetID: "s", VIPAddress: "198.18.0.10", PortID: "p",
		FloatingIPID: "f", FloatingIPAddress: "198.19.0.5", FloatingNetworkID: "ext", Ingress: "198.19.0.5"}
	pinned := public.DeepCopy()
	pinned.FloatingIPAdopted = true
	internal := &v1alpha1.ExposureStatus{NetworkID: "n", SubnetID: "s", VIPAddress: "198.18.0.10", PortID: "p", Ingress: "198.18.0.10"}
	portOnly := &v1alpha1.ExposureStatus{NetworkID: "n", SubnetID: "s", VIPAddress: "198.18.0.10", PortID: "p"}
	failedEarly := &v1alpha1.ExposureStatus{NetworkID: "n", SubnetID: "s"}
	fresh := &v1alpha1.ExposureStatus{}
	same := Config{NetworkID: "n", SubnetID: "s", FloatingNetworkID: "ext"}
	with := func(f func(*Config)) Config { c := same; f(&c); return c }
	for _, tc := range []struct {
		name   string
		cfg    Config
		status *v1alpha1.ExposureStatus
		field  string // "" when accepted
	}{
		{"nothing recorded yet, anything goes", Config{NetworkID: "n2", SubnetID: "s2", InternalOnly: true, FloatingIP: "198.19.0.9"}, fresh, ""},
		{"a failed first attempt recorded no VIP: the network may be fixed", Config{NetworkID: "n2", SubnetID: "s2"}, failedEarly, ""},
		{"unchanged public", same, public, ""},
		{"another network", with(func(c *Config) { c.NetworkID = "n2" }), public, "networkID"},
		{"another subnet", with(func(c *Config) { c.SubnetID = "s2" }), public, "subnetID"},
		{"another subnet before the floating IP", with(func(c *Config) { c.SubnetID = "s2" }), portOnly, "subnetID"},
		{"pinning the current floating IP", with(func(c *Config) { c.FloatingIP = "198.19.0.5" }), public, ""},
		{"another floating IP", with(func(c *Config) { c.FloatingIP = "198.19.0.6" }), public, "floatingIP"},
		{"public to internal", with(func(c *Config) { c.InternalOnly = true }), public, "internalOnly"},
		{"internal to public", same, internal, "internalOnly"},
		{"unchanged internal", with(func(c *Config) { c.InternalOnly = true }), internal, ""},
		{"another VIP", with(func(c *Config) { c.VIPAddress = "198.18.0.11" }), public, "vipAddress"},
		{"the same VIP", with(func(c *Config) { c.VIPAddress = "198.18.0.10" }), public, ""},
		{"another floating pool", with(func(c *Config) { c.FloatingNetworkID = "ext2" }), public, "floatingNetworkID"},
		{"a pinned floating IP is from any pool", with(func(c *Config) { c.FloatingNetworkID = "ext2" }), pinned, ""},
		{"a pool by name only is checked against Neutron", with(func(c *Config) { c.FloatingNetworkID, c.FloatingPoolName = "", "other" }), public, ""},
	} {
		err := checkImmutable(&tc.cfg, tc.status)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field+" is ")):
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.field)
		case err != nil && !strings.Contains(err.Error(), tc.status.VIPAddress):
			t.Errorf("%s: error %q does not name the recorded VIP", tc.name, err)
		}
	}
}

func TestIngressNeverShowsThePrivateVIPOfAPublicExposure(t *testing.T) {
	// A public exposure whose floating IP is not allocated yet (e.g. quota) reports nothing.
	s := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10", PortID: "p"}
	if got := ingressOf(s, false); got != "" {
		t.Errorf("public exposure without a floating IP reports %q, want nothing", got)
	}
	if got := ingressOf(s, true); got != "198.18.0.10" {
		t.Errorf("internal exposure reports %q, want its VIP", got)
	}
	s.Ingress = "198.19.0.5"
	if got := ingressOf(s, false); got != "198.19.0.5" {
		t.Errorf("once published, the ingress is %q, want the recorded 198.19.0.5", got)
	}
}

func TestWithTagsKeepsOthersAndDropsForeignClusterAndOwnerTags(t *testing.T) {
	got := mark{identity: "c1", owner: "u1"}.withTags([]string{"team=a", openstack.ClusterTag("someone-else"), openstack.OwnerTag("u2")})
	want := []string{openstack.TagExtension, openstack.ClusterTag("c1"), openstack.OwnerTag("u1"), "team=a"}
	if !slices.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
}

func TestExposureLocksSerialise(t *testing.T) {
	var (
		l       exposureLocks
		wg      sync.WaitGroup
		mu      sync.Mutex
		inside  int
		overlap bool
	)
	for range 8 {
		wg.Go(func() {
			unlock := l.lock("uid-1")
			mu.Lock()
			inside++
			overlap = overlap || inside > 1
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		})
	}
	// Another exposure is not blocked by uid-1.
	unlockOther := l.lock("uid-2")
	unlockOther()
	wg.Wait()
	if overlap {
		t.Error("two holders of the same exposure lock at once")
	}
	if len(l.locks) != 0 {
		t.Errorf("%d lock entries left after all were released", len(l.locks))
	}
}

func TestFinishBacksOffWhileAgentPodsRemain(t *testing.T) {
	a := &Actuator{opts: ActuatorOptions{MinBackoff: time.Second, MaxBackoff: 4 * time.Second}, failures: map[types.UID]int{}}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	var delays []time.Duration
	for range 4 {
		var requeue *reconcilerutils.RequeueAfterError
		if err := a.finish(exp, errAgentPodsRemain); !errors.As(err, &requeue) {
			t.Fatalf("got %v, want a requeue", err)
		} else {
			delays = append(delays, requeue.RequeueAfter)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
}

func TestMarkTellsForeignOwners(t *testing.T) {
	ours := mark{identity: "c1", owner: "u1"}
	other := mark{identity: "c1", owner: "u2"}
	legacy := mark{identity: "c1"}
	for _, tc := range []struct {
		name string
		m    mark
		port ports.Port
		want string
	}{
		{"our owner tag", ours, ports.Port{Tags: ours.tags()}, ""},
		{"another owner's tag", ours, ports.Port{Tags: other.tags()}, "u2"},
		{"a port without owner (from before owners)", ours, ports.Port{Tags: legacy.tags()}, ""},
		{"untagged, our description", ours, ports.Port{Description: ours.description()}, ""},
		{"untagged, another owner's description", ours, ports.Port{Description: other.description()}, "(unknown, see the port's description)"},
		{"an exposure from before owners sees an owned port as foreign", legacy, ports.Port{Tags: other.tags()}, "u2"},
	} {
		if got := tc.m.foreignOwner(&tc.port); got != tc.want {
			t.Errorf("%s: foreign owner %q, want %q", tc.name, got, tc.want)
		}
	}
	if ours.description() == other.description() || legacy.description() == ours.description() {
		t.Error("the floating IP descriptions of two owners (or of an owner and no owner) are equal")
	}
}

func TestRecordedMarkWins(t *testing.T) {
	recorded := &v1alpha1.ExposureStatus{Identity: "old-id", Owner: "old-uid"}
	if got := markOf(recorded, "new-id", "new-uid", nil); got != (mark{identity: "old-id", owner: "old-uid"}) {
		t.Errorf("mark %+v, want the recorded one", got)
	}
	if got := markOf(&v1alpha1.ExposureStatus{Identity: "old-id"}, "new-id", "new-uid", nil); got != (mark{identity: "old-id"}) {
		t.Errorf("mark %+v of an exposure from before owners, want no owner", got)
	}
	if got := markOf(&v1alpha1.ExposureStatus{}, "new-id", "new-uid", nil); got != (mark{identity: "new-id", owner: "new-uid"}) {
		t.Errorf("mark %+v of a new exposure, want the derived identity and its UID", got)
	}
}

// TestDescriptionFitsNeutron: the longest identity (200 characters) with an owner gives a
// description within Neutron's 255 characters, and two such identities that differ only at
// their end still give different marks.
func TestDescriptionFitsNeutron(t *testing.T) {
	long := strings.Repeat("a", 199)
	seen := map[string]bool{}
	for _, m := range []mark{
		{identity: long + "1", owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
		{identity: long + "2", owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
		{identity: long + "1"},
		{identity: "short", owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
	} {
		d := m.description()
		if len(d) > 255 {
			t.Errorf("the description of identity %.8s… owner %q has %d characters: %s", m.identity, m.owner, len(d), d)
		}
		if seen[d] {
			t.Errorf("two marks share the description %s", d)
		}
		seen[d] = true
	}
	if d := (mark{identity: "short", owner: "o"}).description(); !strings.Contains(d, "cluster short, owner o ") {
		t.Errorf("a short identity is changed: %s", d)
	}
}
