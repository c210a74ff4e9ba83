// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Names of the objects that Bootstrap creates, and their defaults.
const (
	// Namespace is where a self-hosted shoot keeps its extension resources.
	Namespace = "kube-system"
	// CloudProviderSecretName is the Secret with provider-openstack's credential keys.
	CloudProviderSecretName = "cloudprovider"
	// DefaultShootName names the Shoot in the Cluster and the Infrastructure object.
	DefaultShootName = "local"
	// DefaultExposureType is the extension type of the exposure in the Shoot.
	DefaultExposureType = "kube-vip"
	// ControlPlaneWorkerPool is the name of the Shoot's control-plane worker pool.
	ControlPlaneWorkerPool = "control-plane"

	openstackProviderAPIVersion = "openstack.provider.extensions.gardener.cloud/v1alpha1"
)

// BootstrapOptions describe the shoot and its OpenStack infrastructure. OpenStackEnv's
// BootstrapOptions fills them for the local environment.
type BootstrapOptions struct {
	// ShootName defaults to DefaultShootName.
	ShootName string
	// Region is the shoot's OpenStack region.
	Region string
	// AuthURL is Keystone's v3 URL, put in the Secret (authURL) and the CloudProfile (keystoneURL).
	AuthURL string
	// DomainName and TenantName go into the Secret.
	DomainName string
	TenantName string
	// Either ApplicationCredentialID and ApplicationCredentialSecret, or Username and
	// Password, go into the Secret.
	ApplicationCredentialID     string
	ApplicationCredentialSecret string
	Username                    string
	Password                    string

	// The infrastructure, as provider-openstack's InfrastructureStatus reports it.
	NetworkID         string
	SubnetID          string
	SubnetCIDR        string
	RouterID          string
	FloatingPoolID    string
	FloatingPoolName  string
	SecurityGroupID   string
	SecurityGroupName string

	// Seed adds a Seed to the Cluster. Gardener sets none for a self-hosted shoot (GEP-28),
	// so code under test must not need it; this is for code paths shared with seeds.
	Seed bool

	// ExposureType defaults to DefaultExposureType.
	ExposureType string
	// ExposureProviderConfig, if set, is the Shoot's control-plane
	// exposure.extension.providerConfig (a kube-vip ExposureConfig).
	ExposureProviderConfig *runtime.RawExtension
}

func (o *BootstrapOptions) validate() error {
	var errs []error
	if o.Region == "" || o.AuthURL == "" || o.DomainName == "" || o.TenantName == "" {
		errs = append(errs, errors.New("region, authURL, domainName and tenantName are required"))
	}
	appCred := o.ApplicationCredentialID != "" || o.ApplicationCredentialSecret != ""
	password := o.Username != "" || o.Password != ""
	if appCred == password {
		errs = append(errs, errors.New("give either an application credential or username and password"))
	}
	if o.NetworkID == "" || o.SubnetID == "" || o.RouterID == "" || o.FloatingPoolID == "" {
		errs = append(errs, errors.New("networkID, subnetID, routerID and floatingPoolID are required"))
	}
	return errors.Join(errs...)
}

// Bootstrap creates or updates, in the cluster of c, what Gardener provides to an
// extension of a self-hosted shoot: the Cluster "kube-system" (Shoot and CloudProfile; a
// Seed only with opts.Seed),
// the Infrastructure with an OpenStack InfrastructureStatus, and the Secret "cloudprovider",
// all for namespace kube-system.
func Bootstrap(ctx context.Context, c client.Client, opts BootstrapOptions) error {
	if opts.ShootName == "" {
		opts.ShootName = DefaultShootName
	}
	if opts.ExposureType == "" {
		opts.ExposureType = DefaultExposureType
	}
	if err := opts.validate(); err != nil {
		return fmt.Errorf("invalid bootstrap options: %w", err)
	}
	if err := ensureSecret(ctx, c, opts); err != nil {
		return err
	}
	if err := ensureCluster(ctx, c, opts); err != nil {
		return err
	}
	return ensureInfrastructure(ctx, c, opts)
}

func ensureSecret(ctx context.Context, c client.Client, opts BootstrapOptions) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CloudProviderSecretName, Namespace: Namespace}}
	data := map[string][]byte{
		"domainName": []byte(opts.DomainName),
		"tenantName": []byte(opts.TenantName),
		"authURL":    []byte(opts.AuthURL),
	}
	if opts.ApplicationCredentialID != "" {
		data["applicationCredentialID"] = []byte(opts.ApplicationCredentialID)
		data["applicationCredentialSecret"] = []byte(opts.ApplicationCredentialSecret)
	} else {
		data["username"] = []byte(opts.Username)
		data["password"] = []byte(opts.Password)
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Type = corev1.SecretTypeOpaque
		secret.Data = data
		return nil
	}); err != nil {
		return fmt.Errorf("secret %s/%s: %w", Namespace, CloudProviderSecretName, err)
	}
	return nil
}

func ensureCluster(ctx context.Context, c client.Client, opts BootstrapOptions) error {
	// gardenadm gives the Shoot a UID that stays for the life of the cluster (persisted on
	// the first node, also across re-runs of init); the namespace's UID is that here.
	namespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, namespace); err != nil {
		return fmt.Errorf("reading namespace %s: %w", Namespace, err)
	}
	shoot, err := rawJSON(&gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.ShootName, Namespace: "garden"},
		Spec: gardencorev1beta1.ShootSpec{
			CloudProfile: &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "openstack"},
			Region:       opts.Region,
			Networking:   &gardencorev1beta1.Networking{Nodes: nonEmpty(opts.SubnetCIDR)},
			Provider: gardencorev1beta1.Provider{
				Type: "openstack",
				Workers: []gardencorev1beta1.Worker{{
					Name:    ControlPlaneWorkerPool,
					Machine: gardencorev1beta1.Machine{Type: "m1.large"},
					Minimum: 3,
					Maximum: 3,
					ControlPlane: &gardencorev1beta1.WorkerControlPlane{
						Exposure: &gardencorev1beta1.Exposure{Extension: &gardencorev1beta1.ExtensionExposure{
							Type:           new(opts.ExposureType),
							ProviderConfig: opts.ExposureProviderConfig,
						}},
					},
				}},
			},
		},
		Status: gardencorev1beta1.ShootStatus{TechnicalID: Namespace, UID: namespace.UID},
	})
	if err != nil {
		return err
	}
	cloudProfileConfig, err := rawJSON(map[string]any{
		"apiVersion":    openstackProviderAPIVersion,
		"kind":          "CloudProfileConfig",
		"keystoneURL":   opts.AuthURL,
		"machineImages": []any{},
	})
	if err != nil {
		return err
	}
	cloudProfile, err := rawJSON(&gardencorev1beta1.CloudProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "CloudProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: "openstack"},
		Spec: gardencorev1beta1.CloudProfileSpec{
			Type:           "openstack",
			Regions:        []gardencorev1beta1.Region{{Name: opts.Region}},
			ProviderConfig: &runtime.RawExtension{Raw: cloudProfileConfig},
		},
	})
	if err != nil {
		return err
	}
	seed, err := rawJSON(&gardencorev1beta1.Seed{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Seed"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.ShootName},
		Spec: gardencorev1beta1.SeedSpec{
			Provider: gardencorev1beta1.SeedProvider{Type: "openstack", Region: opts.Region},
		},
	})
	if err != nil {
		return err
	}
	cluster := &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, cluster, func() error {
		cluster.Spec.Shoot = runtime.RawExtension{Raw: shoot}
		cluster.Spec.CloudProfile = runtime.RawExtension{Raw: cloudProfile}
		cluster.Spec.Seed = nil
		if opts.Seed {
			cluster.Spec.Seed = &runtime.RawExtension{Raw: seed}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("cluster %s: %w", Namespace, err)
	}
	return nil
}

func ensureInfrastructure(ctx context.Context, c client.Client, opts BootstrapOptions) error {
	infra := &extensionsv1alpha1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: opts.ShootName, Namespace: Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, infra, func() error {
		infra.Spec.Type = "openstack"
		infra.Spec.Region = opts.Region
		infra.Spec.SecretRef = corev1.SecretReference{Name: CloudProviderSecretName, Namespace: Namespace}
		return nil
	}); err != nil {
		return fmt.Errorf("infrastructure %s/%s: %w", Namespace, opts.ShootName, err)
	}
	status, err := rawJSON(map[string]any{
		"apiVersion": openstackProviderAPIVersion,
		"kind":       "InfrastructureStatus",
		"networks": map[string]any{
			"id":           opts.NetworkID,
			"name":         "nodes",
			"floatingPool": map[string]any{"id": opts.FloatingPoolID, "name": opts.FloatingPoolName},
			"router":       map[string]any{"id": opts.RouterID},
			"subnets":      []any{map[string]any{"purpose": "nodes", "id": opts.SubnetID, "cidr": opts.SubnetCIDR}},
		},
		"securityGroups": []any{map[string]any{"purpose": "nodes", "id": opts.SecurityGroupID, "name": opts.SecurityGroupName}},
	})
	if err != nil {
		return err
	}
	patch := client.MergeFrom(infra.DeepCopy())
	infra.Status.ProviderStatus = &runtime.RawExtension{Raw: status}
	infra.Status.NodesCIDR = nonEmpty(opts.SubnetCIDR)
	if err := c.Status().Patch(ctx, infra, patch); err != nil {
		return fmt.Errorf("status of infrastructure %s/%s: %w", Namespace, opts.ShootName, err)
	}
	return nil
}

func rawJSON(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return b, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
