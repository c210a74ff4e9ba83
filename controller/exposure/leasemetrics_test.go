// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
)

// The controller's Lease metrics tell a held Lease from an expired or missing one, which
// is what a "no VIP holder" alert needs when every agent (and its metrics) is gone.
func TestLeaseCollector(t *testing.T) {
	now := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := extensionsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	exposure := func(ns string) *extensionsv1alpha1.SelfHostedShootExposure {
		e := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: ns}}
		e.Spec.Type = DefaultType
		return e
	}
	lease := func(ns, holder string, age time.Duration) *coordinationv1.Lease {
		renew := metav1.NewMicroTime(now.Add(-age))
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: agentrollout.LeaseName, Namespace: ns, Labels: agentrollout.Labels()},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](2), RenewTime: &renew},
		}
	}
	// With implementation kube-vip the holder is in kube-vip's own Lease.
	upstream := exposure("upstream")
	upstream.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","agent":{"implementation":"kube-vip"}}`)}
	upstreamLease := lease("upstream", "node-d", 500*time.Millisecond)
	upstreamLease.Name = agentrollout.KubeVIPLeaseName
	// A Lease of the agent's name that is not the extension's (a user's) counts as missing.
	usersLease := lease("users", "node-e", 0)
	usersLease.Labels = nil
	other := exposure("other-type")
	other.Spec.Type = "metallb"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		exposure("held"), lease("held", "node-a", 500*time.Millisecond),
		exposure("expired"), lease("expired", "node-b", 90*time.Second), // every agent down
		exposure("released"), lease("released", "", 0),
		exposure("missing"),
		upstream, upstreamLease,
		exposure("users"), usersLease,
		other, lease("other-type", "node-c", 0),
	).Build()
	collector := &LeaseCollector{Exposures: c, Leases: c, Type: DefaultType,
		Clock: clocktesting.NewFakePassiveClock(now), Log: logr.Discard(), Timeout: time.Second}

	want := `
# HELP kube_vip_lease_held 1 while the exposure's agent Lease (gardener-kube-vip with implementation kube-vip) names a holder whose last renewal is younger than the Lease's duration, else 0: at 0 no node holds the VIP.
# TYPE kube_vip_lease_held gauge
kube_vip_lease_held{exposure="shoot",namespace="expired"} 0
kube_vip_lease_held{exposure="shoot",namespace="held"} 1
kube_vip_lease_held{exposure="shoot",namespace="missing"} 0
kube_vip_lease_held{exposure="shoot",namespace="released"} 0
kube_vip_lease_held{exposure="shoot",namespace="upstream"} 1
kube_vip_lease_held{exposure="shoot",namespace="users"} 0
# HELP kube_vip_lease_holder_info 1 for the node named in the exposure's agent Lease (gardener-kube-vip with implementation kube-vip) (holder="" when nobody holds it or the Lease is missing).
# TYPE kube_vip_lease_holder_info gauge
kube_vip_lease_holder_info{exposure="shoot",holder="",namespace="missing"} 1
kube_vip_lease_holder_info{exposure="shoot",holder="",namespace="released"} 1
kube_vip_lease_holder_info{exposure="shoot",holder="",namespace="users"} 1
kube_vip_lease_holder_info{exposure="shoot",holder="node-a",namespace="held"} 1
kube_vip_lease_holder_info{exposure="shoot",holder="node-b",namespace="expired"} 1
kube_vip_lease_holder_info{exposure="shoot",holder="node-d",namespace="upstream"} 1
# HELP kube_vip_lease_renew_age_seconds Seconds since the last renewal recorded in the exposure's agent Lease (gardener-kube-vip with implementation kube-vip), by the controller's wall clock (absent while the Lease is missing).
# TYPE kube_vip_lease_renew_age_seconds gauge
kube_vip_lease_renew_age_seconds{exposure="shoot",namespace="expired"} 90
kube_vip_lease_renew_age_seconds{exposure="shoot",namespace="held"} 0.5
kube_vip_lease_renew_age_seconds{exposure="shoot",namespace="released"} 0
kube_vip_lease_renew_age_seconds{exposure="shoot",namespace="upstream"} 0.5
# HELP kube_vip_lease_scrape_error 1 when the controller could not read the exposures or a Lease in this scrape.
# TYPE kube_vip_lease_scrape_error gauge
kube_vip_lease_scrape_error 0
`
	if err := testutil.CollectAndCompare(collector, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
