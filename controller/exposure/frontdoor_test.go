// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// TestFrontDoorProvesThePublishedPath: on the floating-IP path the VIP answering is not
// enough; the VIP path never dials the floating IP; a dual-stack exposure's IPv6 VIP, its
// own published door, must answer too.
func TestFrontDoorProvesThePublishedPath(t *testing.T) {
	const vip, vip6, fip = "198.18.0.100", "2001:2:0:10::64", "198.19.0.5"
	holder := &v1alpha1.AgentStatus{LeaseHolder: "cp-0", HolderReady: true}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{Port: 443}}
	for _, tc := range []struct {
		name       string
		path       string
		otherVIP   string
		answering  []string
		wantWorks  bool
		wantReason string
		wantDialed []string
	}{
		{"the floating IP silent", v1alpha1.FrontDoorPathFloatingIP, "", []string{vip}, false, reasonFloatingIPNotAnswering, []string{vip, fip}},
		{"both answer", v1alpha1.FrontDoorPathFloatingIP, "", []string{vip, fip}, true, reasonHeld, []string{vip, fip}},
		{"the VIP silent", v1alpha1.FrontDoorPathFloatingIP, "", []string{fip}, false, reasonNotAnswering, []string{vip}},
		{"the VIP only (probeFloatingIP: false)", v1alpha1.FrontDoorPathVIP, "", []string{vip}, true, reasonHeld, []string{vip}},
		// Dual stack: the IPv6 VIP is a published door of its own.
		{"dual stack, the IPv6 VIP silent", v1alpha1.FrontDoorPathFloatingIP, vip6, []string{vip, fip}, false, reasonNotAnswering, []string{vip, vip6}},
		{"dual stack, every door answers", v1alpha1.FrontDoorPathFloatingIP, vip6, []string{vip, vip6, fip}, true, reasonHeld, []string{vip, vip6, fip}},
		{"dual stack internal, the IPv6 VIP silent", v1alpha1.FrontDoorPathVIP, vip6, []string{vip}, false, reasonNotAnswering, []string{vip, vip6}},
		{"dual stack internal, both VIPs answer", v1alpha1.FrontDoorPathVIP, vip6, []string{vip, vip6}, true, reasonHeld, []string{vip, vip6}},
	} {
		var dialed []string
		a := &Actuator{opts: ActuatorOptions{FrontDoorProbe: FrontDoorTCP, Dial: func(_ context.Context, _, address string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(address)
			dialed = append(dialed, host)
			if !slices.Contains(tc.answering, host) {
				return nil, errors.New("connection refused")
			}
			c, s := net.Pipe()
			_ = s.Close()
			return c, nil
		}}}
		status := &v1alpha1.ExposureStatus{VIPAddress: vip, FloatingIPAddress: fip, FrontDoorPath: tc.path}
		if tc.otherVIP != "" {
			status.OtherVIPs = []v1alpha1.FamilyVIP{{Address: tc.otherVIP}}
		}
		got := a.probeFrontDoor(context.Background(), exp, status, holder)
		if got.works != tc.wantWorks || got.reason != tc.wantReason || !slices.Equal(dialed, tc.wantDialed) {
			t.Errorf("%s: works %v reason %s dialed %v (%s), want %v %s %v", tc.name, got.works, got.reason, dialed, got.message, tc.wantWorks, tc.wantReason, tc.wantDialed)
		}
		if tc.wantReason == reasonFloatingIPNotAnswering && !strings.Contains(got.message, "probeFloatingIP: false") {
			t.Errorf("%s: message %q does not name the opt-out", tc.name, got.message)
		}
		// A VIP published without a probed floating IP (IPv6, or the IPv4 VIP of the VIP
		// path) is reached from the controller's host only, and Succeeded says so.
		if got.works {
			var want []string
			if tc.path == v1alpha1.FrontDoorPathVIP {
				want = append(want, vip+":443")
			}
			if tc.otherVIP == vip6 {
				want = append(want, "[2001:2:0:10::64]:443")
			}
			note := " " + strings.Join(want, " and ") + " was reached from the controller's host only"
			if len(want) == 0 {
				note = "was reached"
			}
			if noted := strings.Contains(got.message, note); noted != (len(want) > 0) {
				t.Errorf("%s: message %q, want the local-only note for %v", tc.name, got.message, want)
			}
		}
	}
}

// TestVIPDoorProof: the VIPHeld message says how far the controller's dial proved a door
// published without a probed floating IP (an IPv6 VIP, an internal-only VIP): across the
// node network from another node, or locally on the node that holds it, or from a host the
// controller does not know.
func TestVIPDoorProof(t *testing.T) {
	const v4, v6 = "198.18.0.100:443", "[2001:2:0:10::64]:443"
	dual := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.100", OtherVIPs: []v1alpha1.FamilyVIP{{Address: "2001:2:0:10::64"}}}
	ipv4 := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.100"}
	for _, tc := range []struct {
		name, self, holder string
		status             *v1alpha1.ExposureStatus
		floatingIPProbed   bool
		want               string
	}{
		{"IPv6, another node holds it", "cp-1", "cp-0", dual, true, `The IPv6 door ` + v6 + ` was reached from node "cp-1", across the node network to the holder;`},
		{"IPv6, the controller's node holds it", "cp-0", "cp-0", dual, true, `The IPv6 door ` + v6 + ` was reached on node "cp-0", which holds it, so locally only:`},
		{"IPv6, the controller's node is unknown", "", "cp-0", dual, true, `The IPv6 door ` + v6 + ` was reached from the controller's host only`},
		{"internal-only IPv4, another node holds it", "cp-1", "cp-0", ipv4, false, `The VIP door ` + v4 + ` was reached from node "cp-1", across the node network to the holder;`},
		{"internal-only IPv4, the controller's node holds it", "cp-0", "cp-0", ipv4, false, `The VIP door ` + v4 + ` was reached on node "cp-0", which holds it, so locally only:`},
		{"internal-only dual stack, unknown node", "", "cp-0", dual, false, `The VIP door ` + v4 + ` and ` + v6 + ` was reached from the controller's host only`},
		{"IPv4 through its floating IP", "cp-1", "cp-0", ipv4, true, ""},
	} {
		a := &Actuator{opts: ActuatorOptions{NodeName: tc.self}}
		got := a.vipProof(tc.status, "443", tc.holder, tc.floatingIPProbed)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.name, got, tc.want)
		}
	}
}

func TestFrontDoorPath(t *testing.T) {
	public := ResolveConfig(&v1alpha1.ExposureConfig{}, &InfrastructureStatus{})
	off := false
	vipOnly := ResolveConfig(&v1alpha1.ExposureConfig{ProbeFloatingIP: &off}, &InfrastructureStatus{})
	internal := ResolveConfig(&v1alpha1.ExposureConfig{InternalOnly: new(true)}, &InfrastructureStatus{})
	tcp := &Actuator{opts: ActuatorOptions{FrontDoorProbe: FrontDoorTCP}}
	lease := &Actuator{opts: ActuatorOptions{FrontDoorProbe: FrontDoorLease}}
	for _, tc := range []struct {
		name string
		a    *Actuator
		cfg  *Config
		want string
	}{
		{"public, by default", tcp, public, v1alpha1.FrontDoorPathFloatingIP},
		{"public, probeFloatingIP: false", tcp, vipOnly, v1alpha1.FrontDoorPathVIP},
		{"internal only", tcp, internal, v1alpha1.FrontDoorPathVIP},
		{"not probed", lease, public, ""},
	} {
		if got := tc.a.frontDoorPath(tc.cfg); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPlaintextKeystoneIsWarnedInTheStatus: a verification against Keystone over http
// succeeds, and the OpenStackVerified condition says that the credentials travel
// unencrypted; over https it says nothing of the kind.
func TestPlaintextKeystoneIsWarnedInTheStatus(t *testing.T) {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	for _, tc := range []struct {
		url    string
		reason string
	}{
		{"http://keystone.example:5000/v3", reasonVerifiedWithoutTLS},
		{"https://keystone.example:5000/v3", reasonVerified},
	} {
		status := &v1alpha1.ExposureStatus{}
		(&Actuator{}).setVerified(exp, status, openstack.AuthConfig{AuthURL: tc.url}, nil)
		c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionOpenStackVerified)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason {
			t.Fatalf("%s: condition %+v, want True with reason %s", tc.url, c, tc.reason)
		}
		if warned := strings.Contains(c.Message, "plain http"); warned != (tc.reason == reasonVerifiedWithoutTLS) {
			t.Errorf("%s: message %q", tc.url, c.Message)
		}
	}
}

// TestUncheckedFrontDoorSaysSo: with --front-door-probe=off the VIPHeld condition is
// Unknown and says that Succeeded does not mean a working front door.
func TestUncheckedFrontDoorSaysSo(t *testing.T) {
	cl := newCluster(t, nil)
	status := &v1alpha1.ExposureStatus{}
	if err := cl.a.awaitFrontDoor(t.Context(), logr.Discard(), cl.exp, status); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionVIPHeld)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != reasonNotChecked {
		t.Fatalf("VIPHeld = %+v, want Unknown with reason %s", c, reasonNotChecked)
	}
	if !strings.Contains(c.Message, "--front-door-probe=off") || !strings.Contains(c.Message, "Succeeded does not mean") {
		t.Errorf("VIPHeld message %q does not say that the front door went unchecked", c.Message)
	}
}
