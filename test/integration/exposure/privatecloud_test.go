// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestCloudProfileKeystoneCA: a private cloud whose Keystone has a certificate of an
// internal CA (the local Keystone served over HTTPS with a CA this test makes), reached
// through the CloudProfile's Keystone URL, with a credentials Secret that names neither URL
// nor CA. Without a CA the exposure fails with ERR_CONFIGURATION_PROBLEM naming the
// certificate and creates nothing; the CloudProfile's keystoneCACert, or the caCert of the
// region's keystoneURLs entry, makes it converge; keystoneForceInsecure does too, and the
// controller logs a warning. Over TLS, OpenStackVerified and the Events carry no plain-http
// warning (TestSucceededOnlyOnceTheFrontDoorWorks checks plain http).
func TestCloudProfileKeystoneCA(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ca := framework.NewTestCA(t, "keystone")
	httpsURL := framework.KeystoneTLS(t, e.os, ca)
	caPEM := string(ca.CAPEM)

	// The Cluster's CloudProfile comes back after the exposures are gone (cleanups run last
	// in, first out).
	original, err := framework.SetCloudProfileConfig(ctx, e.cp.Client, cloudProfileConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = framework.SetCloudProfileConfig(context.Background(), e.cp.Client, original) })

	var warnings logLines
	startController(t, e, actuatorOptions(func(o *exposure.ActuatorOptions) {
		o.ClientFactory = openstack.NewClientFactory(openstack.FactoryOptions{
			Metrics: openstack.NewMetrics(prometheus.NewRegistry()),
			Log:     funcr.New(warnings.add, funcr.Options{}),
		})
	}))

	for _, tc := range []struct {
		name string
		// withCA is the CloudProfile's providerConfig that makes the exposure converge.
		withCA      map[string]any
		wantWarning bool
	}{
		{name: "keystoneCACert", withCA: cloudProfileConfig(map[string]any{"keystoneURL": httpsURL, "keystoneCACert": caPEM})},
		{name: "caCert of the region", withCA: cloudProfileConfig(map[string]any{
			// The region's entry wins over keystoneURL and keystoneCACert.
			"keystoneURL":    e.os.AuthURL,
			"keystoneCACert": "no certificate",
			"keystoneURLs":   []any{map[string]any{"region": e.os.Region, "url": httpsURL, "caCert": caPEM}},
		})},
		{name: "keystoneForceInsecure", withCA: cloudProfileConfig(map[string]any{"keystoneURL": httpsURL, "keystoneForceInsecure": true}), wantWarning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := func(config map[string]any) {
				t.Helper()
				if _, err := framework.SetCloudProfileConfig(ctx, e.cp.Client, config); err != nil {
					t.Fatal(err)
				}
			}
			// First: the Neutron calls below give the controller's cache time to see the
			// Cluster without the previous case's CA before the exposure exists.
			set(cloudProfileConfig(map[string]any{"keystoneURL": httpsURL}))
			identity := useIdentity(t, ctx, e)
			nodes := createNodes(t, ctx, e, identity, 1)
			secretName := passwordSecret(t, ctx, e, identity, e.os.Password)
			warnings.reset()

			exp := newExposure(exposureOptions{name: identity, nodes: nodes, secretName: secretName})
			create(t, ctx, e, exp, identity)
			waitForUntrustedKeystone(t, ctx, e, exp, identity)

			set(tc.withCA)
			final := triggerReconcile(t, ctx, e, exp, nil)()
			if len(final.Status.Ingress) != 1 || len(taggedPorts(t, ctx, e, identity)) != 1 {
				t.Errorf("with the CloudProfile's %s: ingress %v, want one floating IP and one VIP port", tc.name, final.Status.Ingress)
			}
			checkKeystoneTLS(t, final, true)
			// The recorder writes Events in the background: none for 2 s after the reconcile.
			// The listing gets the test's context, not the poll's, whose end it must not hit.
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
				return slices.Contains(eventReasons(t, ctx, e, final), "VerifiedWithoutTLS"), nil
			}); err == nil {
				t.Errorf("a VerifiedWithoutTLS Event (the plain-http warning) for a Keystone reached over TLS")
			}
			if warned := warnings.contain("not verified"); warned != tc.wantWarning {
				t.Errorf("warning that certificates are not verified logged: %v, want %v; log: %v", warned, tc.wantWarning, warnings.all())
			}
		})
	}
}

// cloudProfileConfig is a provider-openstack CloudProfileConfig with the given fields.
func cloudProfileConfig(fields map[string]any) map[string]any {
	config := map[string]any{
		"apiVersion":    "openstack.provider.extensions.gardener.cloud/v1alpha1",
		"kind":          "CloudProfileConfig",
		"machineImages": []any{},
	}
	for k, v := range fields {
		config[k] = v
	}
	return config
}

// logLines collects what a logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = nil
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logLines) contain(s string) bool {
	for _, line := range l.all() {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}
