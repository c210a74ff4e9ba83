// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// LeaseCollector exports, on every scrape, who holds each exposure's agent Lease and how
// old its last renewal is. It is read by the controller, not by the agents, so a "no VIP
// holder" alert still fires when every agent is down (their own metrics are gone then).
type LeaseCollector struct {
	// Exposures lists the SelfHostedShootExposures (a cached client will do).
	Exposures client.Reader
	// Leases reads the Leases; an uncached reader (the manager's APIReader), so that
	// the controller does not cache every Lease of the cluster.
	Leases client.Reader
	// Type is the extension type of the exposures to report.
	Type  string
	Clock clock.PassiveClock
	Log   logr.Logger
	// Timeout bounds one scrape's reads.
	Timeout time.Duration
}

var (
	leaseHolderDesc = prometheus.NewDesc("kube_vip_lease_holder_info",
		"1 for the node named in the exposure's agent Lease (gardener-kube-vip with implementation kube-vip) (holder=\"\" when nobody holds it or the Lease is missing).",
		[]string{"namespace", "exposure", "holder"}, nil)
	leaseAgeDesc = prometheus.NewDesc("kube_vip_lease_renew_age_seconds",
		"Seconds since the last renewal recorded in the exposure's agent Lease (gardener-kube-vip with implementation kube-vip), by the controller's wall clock (absent while the Lease is missing).",
		[]string{"namespace", "exposure"}, nil)
	leaseHeldDesc = prometheus.NewDesc("kube_vip_lease_held",
		"1 while the exposure's agent Lease (gardener-kube-vip with implementation kube-vip) names a holder whose last renewal is younger than the Lease's duration, else 0: at 0 no node holds the VIP.",
		[]string{"namespace", "exposure"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("kube_vip_lease_scrape_error",
		"1 when the controller could not read the exposures or a Lease in this scrape.",
		nil, nil)
)

// Describe implements prometheus.Collector.
func (c *LeaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaseHolderDesc
	ch <- leaseAgeDesc
	ch <- leaseHeldDesc
	ch <- scrapeErrorDesc
}

// Collect implements prometheus.Collector: one list of exposures and one read of a Lease
// per exposure (and a read of its Cluster from the cache when the exposure has no config).
func (c *LeaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	failed := 0.0
	defer func() { ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed) }()

	exposures := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := c.Exposures.List(ctx, exposures); err != nil {
		c.Log.Error(err, "Listing the exposures for the Lease metrics failed")
		failed = 1
		return
	}
	now := c.Clock.Now()
	for _, exp := range exposures.Items {
		if exp.Spec.Type != c.Type || exp.DeletionTimestamp != nil {
			continue
		}
		name, err := c.leaseName(ctx, &exp)
		if err != nil {
			c.Log.Error(err, "Reading the exposure's agent implementation for the metrics failed", "namespace", exp.Namespace)
			failed = 1
			continue
		}
		lease := &coordinationv1.Lease{}
		err = c.Leases.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: name}, lease)
		switch {
		// A Lease of that name without the extension's label is someone else's: as missing.
		case apierrors.IsNotFound(err) || err == nil && !agentrollout.Owned(lease):
			ch <- prometheus.MustNewConstMetric(leaseHolderDesc, prometheus.GaugeValue, 1, exp.Namespace, exp.Name, "")
			ch <- prometheus.MustNewConstMetric(leaseHeldDesc, prometheus.GaugeValue, 0, exp.Namespace, exp.Name)
			continue
		case err != nil:
			c.Log.Error(err, "Reading the agent Lease for the metrics failed", "namespace", exp.Namespace)
			failed = 1
			continue
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		held := 0.0
		ch <- prometheus.MustNewConstMetric(leaseHolderDesc, prometheus.GaugeValue, 1, exp.Namespace, exp.Name, holder)
		if lease.Spec.RenewTime != nil {
			age := now.Sub(lease.Spec.RenewTime.Time)
			ch <- prometheus.MustNewConstMetric(leaseAgeDesc, prometheus.GaugeValue, age.Seconds(), exp.Namespace, exp.Name)
			if holder != "" && lease.Spec.LeaseDurationSeconds != nil &&
				age < time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second {
				held = 1
			}
		}
		ch <- prometheus.MustNewConstMetric(leaseHeldDesc, prometheus.GaugeValue, held, exp.Namespace, exp.Name)
	}
}

// leaseName is the Lease of the agent implementation the exposure's config chooses: from
// the exposure, else from the Shoot in the cached Cluster.
func (c *LeaseCollector) leaseName(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure) (string, error) {
	var shoot *gardencorev1beta1.Shoot
	if exp.Spec.ProviderConfig == nil || len(exp.Spec.ProviderConfig.Raw) == 0 {
		cluster, err := extensionscontroller.GetCluster(ctx, c.Exposures, exp.Namespace)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading the Cluster %s: %w", exp.Namespace, err)
		}
		shoot = clusterShoot(cluster)
	}
	raw, _ := selectConfig(exp, shoot)
	cfg, err := DecodeConfig(raw)
	if err != nil {
		// The reconciliation reports an unreadable config; the default's Lease is read.
		return agentrollout.LeaseName, nil //nolint:nilerr
	}
	return agentrollout.LeaseNameOf(v1alpha1.ImplementationOf(cfg.Agent)), nil
}

// registerLeaseCollector registers a LeaseCollector for the exposures of type typ with
// controller-runtime's registry, which the manager serves on its metrics endpoint. A
// second registration (another manager in the same process, as in tests) keeps the first.
func registerLeaseCollector(mgr manager.Manager, typ string) error {
	c := &LeaseCollector{
		Exposures: mgr.GetClient(), Leases: mgr.GetAPIReader(), Type: typ,
		Clock: clock.RealClock{}, Log: mgr.GetLogger().WithName("lease-metrics"), Timeout: 5 * time.Second,
	}
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); !ok {
			return fmt.Errorf("registering the Lease metrics: %w", err)
		}
	}
	return nil
}
