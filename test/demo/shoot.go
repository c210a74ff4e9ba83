// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// bootstrapShoot gives the shoot's kube-apiserver what Gardener gives an extension in a
// self-hosted shoot: the extension CRDs, the Cluster, the Infrastructure with its
// OpenStack status and the cloudprovider Secret; and the control-plane Node objects that
// the kubelets would register (no kubelet runs here, so they are records only).
func (d *demo) bootstrapShoot(ctx context.Context) error {
	scheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	d.scheme = scheme
	// The shoot's kube-apiserver on node1, dialled from inside node1's namespace. No
	// overall timeout: the manager's watches are long requests.
	cfg := d.nodes[0].ns.RESTConfig()
	cfg.Timeout = 0
	cfg.QPS, cfg.Burst = 50, 100
	d.restConfig = cfg
	if d.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("client for the shoot: %w", err)
	}

	crdPaths, err := framework.GardenerCRDPaths()
	if err != nil {
		return err
	}
	crds, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              crdPaths,
		ErrorIfPathMissing: true,
		Scheme:             scheme,
		MaxTime:            time.Minute,
	})
	if err != nil {
		return fmt.Errorf("installing Gardener's CRDs: %w", err)
	}
	d.out.Printf("installed %d Gardener CRDs (extensions.gardener.cloud, resources.gardener.cloud)", len(crds))

	bootstrap := d.osEnv.BootstrapOptions(framework.ApplicationCredential)
	if err := framework.Bootstrap(ctx, d.c, bootstrap); err != nil {
		return fmt.Errorf("creating the Gardener objects: %w", err)
	}
	if err := d.setTechnicalID(ctx); err != nil {
		return err
	}
	d.out.Printf("Gardener objects in kube-system: Cluster (shoot %q, technical ID %s), Infrastructure %q (network, router, floating pool %q), Secret %s (application credential)",
		framework.DefaultShootName, d.opts.technicalID, framework.DefaultShootName, d.osEnv.ExternalNetworkName, framework.CloudProviderSecretName)

	for _, n := range d.nodes {
		if err := d.ensureNode(ctx, n); err != nil {
			return err
		}
	}
	d.out.Printf("Node objects %s, %s, %s with label %s and their InternalIPs (records: no kubelet runs)",
		d.nodes[0].name, d.nodes[1].name, d.nodes[2].name, exposure.LabelControlPlane)
	return nil
}

// setTechnicalID gives the shoot in the Cluster the demo's technical ID, which names and
// tags the Neutron resources apart from those of tests that share the local OpenStack.
func (d *demo) setTechnicalID(ctx context.Context) error {
	return framework.SetTechnicalID(ctx, d.c, d.opts.technicalID)
}

// ensureNode creates the control-plane Node and sets its addresses.
func (d *demo) ensureNode(ctx context.Context, n shootNode) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, d.c, node, func() error {
		metav1.SetMetaDataLabel(&node.ObjectMeta, exposure.LabelControlPlane, "")
		metav1.SetMetaDataLabel(&node.ObjectMeta, corev1.LabelHostname, n.name)
		return nil
	}); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.ns.IP().String()},
		{Type: corev1.NodeHostName, Address: n.name},
	}
	if err := d.c.Status().Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("addresses of Node %s: %w", n.name, err)
	}
	return nil
}
