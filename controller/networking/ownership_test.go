// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

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
	same := Spec{NetworkID: "n", SubnetID: "s", FloatingNetworkID: "ext"}
	with := func(f func(*Spec)) Spec { c := same; f(&c); return c }
	for _, tc := range []struct {
		name   string
		cfg    Spec
		status *v1alpha1.ExposureStatus
		field  string // "" when accepted
	}{
		{"nothing recorded yet, anything goes", Spec{NetworkID: "n2", SubnetID: "s2", InternalOnly: true, FloatingIP: "198.19.0.9"}, fresh, ""},
		{"a failed first attempt recorded no VIP: the network may be fixed", Spec{NetworkID: "n2", SubnetID: "s2"}, failedEarly, ""},
		{"unchanged public", same, public, ""},
		{"another network", with(func(c *Spec) { c.NetworkID = "n2" }), public, "networkID"},
		{"another subnet", with(func(c *Spec) { c.SubnetID = "s2" }), public, "subnetID"},
		{"another subnet before the floating IP", with(func(c *Spec) { c.SubnetID = "s2" }), portOnly, "subnetID"},
		{"pinning the current floating IP", with(func(c *Spec) { c.FloatingIP = "198.19.0.5" }), public, ""},
		{"another floating IP", with(func(c *Spec) { c.FloatingIP = "198.19.0.6" }), public, "floatingIP"},
		{"public to internal", with(func(c *Spec) { c.InternalOnly = true }), public, "internalOnly"},
		{"internal to public", same, internal, "internalOnly"},
		{"unchanged internal", with(func(c *Spec) { c.InternalOnly = true }), internal, ""},
		{"another VIP", with(func(c *Spec) { c.VIPAddress = "198.18.0.11" }), public, "vipAddress"},
		{"the same VIP", with(func(c *Spec) { c.VIPAddress = "198.18.0.10" }), public, ""},
		{"another floating pool", with(func(c *Spec) { c.FloatingNetworkID = "ext2" }), public, "floatingNetworkID"},
		{"a pinned floating IP is from any pool", with(func(c *Spec) { c.FloatingNetworkID = "ext2" }), pinned, ""},
		{"a pool by name only is checked against Neutron", with(func(c *Spec) { c.FloatingNetworkID, c.FloatingPoolName = "", "other" }), public, ""},
	} {
		err := CheckImmutable(&tc.cfg, tc.status)
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

func TestWithTagsKeepsOthersAndDropsForeignClusterAndOwnerTags(t *testing.T) {
	got := Mark{Identity: "c1", Owner: "u1"}.WithTags([]string{"team=a", openstack.ClusterTag("someone-else"), openstack.OwnerTag("u2")})
	want := []string{openstack.TagExtension, openstack.ClusterTag("c1"), openstack.OwnerTag("u1"), "team=a"}
	if !slices.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
	// A port of an earlier release gets the shoot's and the namespace's tags; stale ones go.
	got = Mark{Identity: "c1", Owner: "u1", Shoot: "s1", Namespace: "n1"}.WithTags([]string{openstack.NamespaceTag("n0"), "team=a"})
	want = []string{openstack.TagExtension, openstack.ClusterTag("c1"), openstack.OwnerTag("u1"), openstack.ShootTag("s1"), openstack.NamespaceTag("n1"), "team=a"}
	if !slices.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
}

func TestMarkTellsForeignOwners(t *testing.T) {
	ours := Mark{Identity: "c1", Owner: "u1"}
	other := Mark{Identity: "c1", Owner: "u2"}
	legacy := Mark{Identity: "c1"}
	for _, tc := range []struct {
		name string
		m    Mark
		port ports.Port
		want string
	}{
		{"our owner tag", ours, ports.Port{Tags: ours.Tags()}, ""},
		{"another owner's tag", ours, ports.Port{Tags: other.Tags()}, "u2"},
		{"a port without owner (from before owners)", ours, ports.Port{Tags: legacy.Tags()}, ""},
		{"untagged, our description", ours, ports.Port{Description: ours.Description()}, ""},
		{"untagged, another owner's description", ours, ports.Port{Description: other.Description()}, "(unknown, see the port's description)"},
		{"an exposure from before owners sees an owned port as foreign", legacy, ports.Port{Tags: other.Tags()}, "u2"},
	} {
		if got := tc.m.ForeignOwner(&tc.port); got != tc.want {
			t.Errorf("%s: foreign owner %q, want %q", tc.name, got, tc.want)
		}
	}
	if ours.Description() == other.Description() || legacy.Description() == ours.Description() {
		t.Error("the floating IP descriptions of two owners (or of an owner and no owner) are equal")
	}
}

func TestRecordedMarkWins(t *testing.T) {
	recorded := &v1alpha1.ExposureStatus{Identity: "old-id", Owner: "old-uid"}
	if got := MarkOf(recorded, "new-id", "new-uid", nil); got != (Mark{Identity: "old-id", Owner: "old-uid"}) {
		t.Errorf("mark %+v, want the recorded one", got)
	}
	if got := MarkOf(&v1alpha1.ExposureStatus{Identity: "old-id"}, "new-id", "new-uid", nil); got != (Mark{Identity: "old-id"}) {
		t.Errorf("mark %+v of an exposure from before owners, want no owner", got)
	}
	if got := MarkOf(&v1alpha1.ExposureStatus{}, "new-id", "new-uid", nil); got != (Mark{Identity: "new-id", Owner: "new-uid"}) {
		t.Errorf("mark %+v of a new exposure, want the derived identity and its UID", got)
	}
}

// TestDescriptionFitsNeutron: the longest identity (200 characters) with an owner gives a
// description within Neutron's 255 characters, and two such identities that differ only at
// their end still give different marks.
func TestDescriptionFitsNeutron(t *testing.T) {
	long := strings.Repeat("a", 199)
	seen := map[string]bool{}
	for _, m := range []Mark{
		{Identity: long + "1", Owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
		{Identity: long + "2", Owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
		{Identity: long + "1"},
		{Identity: "short", Owner: "0f9c6c2e-7d3a-4b8e-9a51-2f6d8c4b1e7a"},
	} {
		d := m.Description()
		if len(d) > 255 {
			t.Errorf("the description of identity %.8s… owner %q has %d characters: %s", m.Identity, m.Owner, len(d), d)
		}
		if seen[d] {
			t.Errorf("two marks share the description %s", d)
		}
		seen[d] = true
	}
	if d := (Mark{Identity: "short", Owner: "o"}).Description(); !strings.Contains(d, "cluster short, owner o ") {
		t.Errorf("a short identity is changed: %s", d)
	}
}
