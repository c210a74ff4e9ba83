// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

func TestRecordedPortMustStillHoldTheVIP(t *testing.T) {
	status := &v1alpha1.ExposureStatus{NetworkID: "net", VIPAddress: "198.18.0.10", PortID: "p"}
	holds := []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.10"}}
	for _, tc := range []struct {
		name string
		port ports.Port
		want string // "" when kept
	}{
		{"unbound, holding the VIP", ports.Port{ID: "p", NetworkID: "net", FixedIPs: holds}, ""},
		{"bound to a server", ports.Port{ID: "p", NetworkID: "net", FixedIPs: holds, DeviceOwner: "compute:nova", DeviceID: "vm"}, "was bound to compute:nova vm"},
		{"re-addressed", ports.Port{ID: "p", NetworkID: "net", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.11"}}}, "no longer holds the VIP 198.18.0.10"},
		{"in another network", ports.Port{ID: "p", NetworkID: "net-2", FixedIPs: holds}, "no longer holds the VIP 198.18.0.10 in network net"},
	} {
		err := checkRecordedPort(&tc.port, status)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !hasCode(err, gardencorev1beta1.ErrorInfraDependencies)):
			t.Errorf("%s: %v, want an infrastructure dependency saying %q", tc.name, err, tc.want)
		}
	}
}

// TestFloatingPoolByNameCannotChange: the pool named in floatingPoolName is resolved in
// Neutron (the fake resolves every name to "ext") and must be the floating IP's.
func TestFloatingPoolByNameCannotChange(t *testing.T) {
	svc := service(networkingtest.NewNeutron(), nil)
	status := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10"}
	fip := &floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", FloatingNetworkID: "ext"}
	if err := svc.checkFloatingPool(context.Background(), Spec{FloatingPoolName: "public"}, fip, status); err != nil {
		t.Errorf("the same pool: %v", err)
	}
	fip.FloatingNetworkID = "ext-old"
	err := svc.checkFloatingPool(context.Background(), Spec{FloatingPoolName: "public"}, fip, status)
	if err == nil || !strings.HasPrefix(err.Error(), "floatingPoolName is \"public (ext)\"") || !strings.Contains(err.Error(), "floating IP 198.19.0.5") {
		t.Errorf("another pool: %v, want a refusal naming floatingPoolName and the floating IP", err)
	}
}

// TestOwnerLookupFailureStopsTheClaim: when the live exposures cannot be listed, a port of
// another owner is neither taken over nor left: the claim fails and nothing is decided.
func TestOwnerLookupFailureStopsTheClaim(t *testing.T) {
	failing := NewService(networkingtest.NewNeutron(), Options{ExposureOwning: func(context.Context, string) (string, error) {
		return "", errors.New("the kube-apiserver is away")
	}})
	fd := &FrontDoor{Spec: Spec{NetworkID: "net", SubnetID: "sub"}, Mark: Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a"}}
	named := []ports.Port{vipPort("p", Mark{Identity: "c1", Owner: "uid-gone"}, time.Time{}, openstack.ShootTag("shoot-a"))}
	if err := failing.claimFrontDoor(context.Background(), fd, "uid-self", named, &v1alpha1.ExposureStatus{}); err == nil || fd.Mark.Owner != "uid-self" {
		t.Errorf("claim with a failing lookup: %v, owner %q", err, fd.Mark.Owner)
	}
}
