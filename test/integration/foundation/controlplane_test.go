// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package foundation

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	gardenerextensions "github.com/gardener/gardener/pkg/extensions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

func TestSelfHostedShootExposureRoundTrip(t *testing.T) {
	cp := framework.StartControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: framework.Namespace},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type:           "kube-vip",
				ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAddress":"198.18.0.50"}`)},
			},
			Port: 443,
			Endpoints: []extensionsv1alpha1.ControlPlaneEndpoint{{
				NodeName:  "control-plane-0",
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.0.11"}},
			}},
		},
	}
	if err := cp.Client.Create(ctx, exp); err != nil {
		t.Fatalf("creating SelfHostedShootExposure: %v", err)
	}

	got := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), got); err != nil {
		t.Fatalf("reading SelfHostedShootExposure back: %v", err)
	}
	if got.Spec.Type != "kube-vip" || got.Spec.Port != 443 {
		t.Errorf("type %q port %d, want kube-vip 443", got.Spec.Type, got.Spec.Port)
	}
	if len(got.Spec.Endpoints) != 1 || got.Spec.Endpoints[0].NodeName != "control-plane-0" ||
		len(got.Spec.Endpoints[0].Addresses) != 1 || got.Spec.Endpoints[0].Addresses[0].Address != "198.18.0.11" {
		t.Errorf("endpoints %+v, want control-plane-0 at 198.18.0.11", got.Spec.Endpoints)
	}
	var cfg map[string]any
	if got.Spec.ProviderConfig == nil || json.Unmarshal(got.Spec.ProviderConfig.Raw, &cfg) != nil || cfg["vipAddress"] != "198.18.0.50" {
		t.Errorf("providerConfig not kept: %v", got.Spec.ProviderConfig)
	}

	// The status subresource exists: an ingress written there is read back.
	got.Status.Ingress = []corev1.LoadBalancerIngress{{IP: "198.19.0.10"}}
	if err := cp.Client.Status().Update(ctx, got); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), got); err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if len(got.Status.Ingress) != 1 || got.Status.Ingress[0].IP != "198.19.0.10" {
		t.Errorf("status.ingress %+v, want 198.19.0.10", got.Status.Ingress)
	}
}

func TestBootstrapObjectsDecode(t *testing.T) {
	cp := framework.StartControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	opts := framework.BootstrapOptions{
		Region:                      "RegionOne",
		AuthURL:                     "http://127.0.0.1:5000/v3",
		DomainName:                  "Default",
		TenantName:                  "demo",
		ApplicationCredentialID:     "app-id",
		ApplicationCredentialSecret: "app-secret",
		NetworkID:                   "net-id",
		SubnetID:                    "subnet-id",
		SubnetCIDR:                  framework.NodeSubnetCIDR,
		RouterID:                    "router-id",
		FloatingPoolID:              "ext-id",
		FloatingPoolName:            "public",
		SecurityGroupID:             "sg-id",
		SecurityGroupName:           "nodes",
		ExposureProviderConfig:      &runtime.RawExtension{Raw: []byte(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","internalOnly":true}`)},
	}
	if err := framework.Bootstrap(ctx, cp.Client, opts); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	// A second run updates in place.
	if err := framework.Bootstrap(ctx, cp.Client, opts); err != nil {
		t.Fatalf("second bootstrap: %v", err)
	}

	// Gardener's own decoder reads the Cluster, as the extension library does.
	cluster, err := gardenerextensions.GetCluster(ctx, cp.Client, framework.Namespace)
	if err != nil {
		t.Fatalf("GetCluster: %v", err)
	}
	if cluster.Shoot == nil || cluster.Shoot.Spec.Region != "RegionOne" || cluster.Shoot.Spec.Provider.Type != "openstack" {
		t.Fatalf("shoot %+v, want region RegionOne and provider openstack", cluster.Shoot)
	}
	if cluster.Seed != nil {
		t.Errorf("a self-hosted shoot's Cluster has no seed, got %+v", cluster.Seed)
	}
	workers := cluster.Shoot.Spec.Provider.Workers
	if len(workers) != 1 || workers[0].ControlPlane == nil || workers[0].ControlPlane.Exposure == nil ||
		workers[0].ControlPlane.Exposure.Extension == nil || workers[0].ControlPlane.Exposure.Extension.ProviderConfig == nil {
		t.Fatalf("control-plane worker pool without exposure extension: %+v", workers)
	}
	if typ := workers[0].ControlPlane.Exposure.Extension.Type; typ == nil || *typ != "kube-vip" {
		t.Errorf("exposure type %v, want kube-vip", typ)
	}
	if cluster.CloudProfile == nil || cluster.CloudProfile.Spec.ProviderConfig == nil {
		t.Fatalf("cloud profile without provider config: %+v", cluster.CloudProfile)
	}
	var cpc struct {
		KeystoneURL string `json:"keystoneURL"`
	}
	if err := json.Unmarshal(cluster.CloudProfile.Spec.ProviderConfig.Raw, &cpc); err != nil || cpc.KeystoneURL != opts.AuthURL {
		t.Errorf("keystoneURL %q (%v), want %q", cpc.KeystoneURL, err, opts.AuthURL)
	}

	infra := &extensionsv1alpha1.Infrastructure{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: framework.DefaultShootName}, infra); err != nil {
		t.Fatalf("reading infrastructure: %v", err)
	}
	if infra.Status.ProviderStatus == nil {
		t.Fatal("infrastructure has no providerStatus")
	}
	var status struct {
		Kind     string `json:"kind"`
		Networks struct {
			ID           string `json:"id"`
			FloatingPool struct{ ID, Name string }
			Router       struct{ ID string }
			Subnets      []struct{ Purpose, ID, CIDR string }
		} `json:"networks"`
		SecurityGroups []struct{ Purpose, ID, Name string } `json:"securityGroups"`
	}
	if err := json.Unmarshal(infra.Status.ProviderStatus.Raw, &status); err != nil {
		t.Fatalf("decoding providerStatus: %v", err)
	}
	n := status.Networks
	if status.Kind != "InfrastructureStatus" || n.ID != "net-id" || n.FloatingPool.ID != "ext-id" || n.FloatingPool.Name != "public" ||
		n.Router.ID != "router-id" || len(n.Subnets) != 1 || n.Subnets[0].Purpose != "nodes" || n.Subnets[0].ID != "subnet-id" ||
		n.Subnets[0].CIDR != framework.NodeSubnetCIDR || len(status.SecurityGroups) != 1 || status.SecurityGroups[0].ID != "sg-id" {
		t.Errorf("unexpected providerStatus %s", infra.Status.ProviderStatus.Raw)
	}

	secret := &corev1.Secret{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: framework.CloudProviderSecretName}, secret); err != nil {
		t.Fatalf("reading secret: %v", err)
	}
	for k, want := range map[string]string{
		"domainName": "Default", "tenantName": "demo", "authURL": opts.AuthURL,
		"applicationCredentialID": "app-id", "applicationCredentialSecret": "app-secret",
	} {
		if got := string(secret.Data[k]); got != want {
			t.Errorf("secret key %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"username", "password"} {
		if _, ok := secret.Data[k]; ok {
			t.Errorf("secret has %s besides the application credential", k)
		}
	}
}
