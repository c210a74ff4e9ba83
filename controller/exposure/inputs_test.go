// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// TestCloudProfileKeystone: the region's keystoneURLs entry wins over keystoneURL and its
// caCert over keystoneCACert, as in provider-openstack; keystoneForceInsecure is read.
func TestCloudProfileKeystone(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         keystone
	}{
		{name: "global", config: `{"keystoneURL":"https://k/v3","keystoneCACert":"CA","keystoneForceInsecure":true}`,
			want: keystone{url: "https://k/v3", caCert: "CA", insecure: true}},
		{name: "region entry wins", config: `{"keystoneURL":"https://k/v3","keystoneCACert":"CA","keystoneURLs":[{"region":"other","url":"https://o/v3","caCert":"O"},{"region":"r1","url":"https://r/v3","caCert":"R"}]}`,
			want: keystone{url: "https://r/v3", caCert: "R"}},
		{name: "region entry without caCert keeps keystoneCACert", config: `{"keystoneCACert":"CA","keystoneURLs":[{"region":"r1","url":"https://r/v3"}]}`,
			want: keystone{url: "https://r/v3", caCert: "CA"}},
		{name: "no provider config", want: keystone{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := &gardencorev1beta1.CloudProfile{}
			if tc.config != "" {
				profile.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(tc.config)}
			}
			got, err := cloudProfileKeystone(&extensionscontroller.Cluster{CloudProfile: profile}, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
