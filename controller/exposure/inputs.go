// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// LabelControlPlane marks control-plane Nodes.
const LabelControlPlane = "node-role.kubernetes.io/control-plane"

// inputs is everything a reconciliation of the OpenStack part depends on, except the
// exposure's endpoints.
type inputs struct {
	// status is the status the reconciliation started from.
	status   *v1alpha1.ExposureStatus
	identity string
	// mark is what the exposure's OpenStack resources carry (identity and owner).
	mark   networking.Mark
	source ConfigSource
	raw    *v1alpha1.ExposureConfig
	config *Config
	infra  *InfrastructureStatus
	auth   openstack.AuthConfig
	// secretHash identifies the version of the credentials Secret (UID and resourceVersion,
	// never its data: the hash ends up in the status).
	secretHash string
	port       int32
	nodes      []controlPlaneNode
	// floatingNetworkID is the floating pool resolved from its name before anything was
	// created (empty when the config names the network by ID or nothing is allocated).
	floatingNetworkID string
	// event records an Event on the exposure (nil: none).
	event func(eventType, reason, format string, args ...any)
	// uid is the exposure's own UID (the mark's owner may be an earlier one).
	uid types.UID
	// namespace is the exposure's, where its agent runs.
	namespace string
	// recordFirst writes the status before the exposure's first create in Neutron (nil:
	// the status records the identity already), so that a deletion knows for certain
	// whether anything was ever created.
	recordFirst func(*v1alpha1.ExposureStatus) error
}

// frontDoor is what the exposure asks of Neutron.
func (in *inputs) frontDoor() *networking.FrontDoor {
	return &networking.FrontDoor{UID: in.uid, Mark: in.mark, Spec: in.config.Spec, FloatingNetworkID: in.floatingNetworkID, RecordFirst: in.recordFirst}
}

// record records a Normal Event on the exposure.
func (in *inputs) record(reason, format string, args ...any) {
	if in.event != nil {
		in.event(corev1.EventTypeNormal, reason, format, args...)
	}
}

type controlPlaneNode struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
	// OtherIPs are the Node's further InternalIPs (the other IP family's of a dual-stack
	// node): its port is found by any of them.
	OtherIPs []string `json:"otherIPs,omitempty"`
	// UID tells a Node re-created with the same name from the old one: it is part of the
	// inputs hash, and the pair label is only ever set on this very object.
	UID types.UID `json:"uid"`
	// pairLabel is the Node's current value of agentrollout.PairLabel (not hashed).
	pairLabel string
}

// hash fingerprints the inputs; it ends up in status.providerStatus.inputsHash.
func (in *inputs) hash(agentImage string) string {
	data, _ := json.Marshal(struct {
		Identity string
		Config   *Config
		Infra    *InfrastructureStatus
		AuthURL  string
		Region   string
		// The CloudProfile's CA and keystoneForceInsecure: a change retries at once.
		CACert     string
		Insecure   bool
		SecretHash string
		Port       int32
		Nodes      []controlPlaneNode
		AgentImage string
	}{in.identity, in.config, in.infra, in.auth.AuthURL, in.auth.Region, in.auth.CloudProfileCACert, in.auth.ForceInsecure, in.secretHash, in.port, in.nodes, agentImage})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

var unsafeIdentityChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// clusterIdentity names the cluster in Neutron (port name and tag). It is the shoot's
// technical ID, else a hash of the shoot's (or the exposure's) namespace and name, so that
// it survives the move of the exposure from the bootstrap cluster into the shoot.
func clusterIdentity(exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) string {
	if cluster != nil && cluster.Shoot != nil {
		if id := unsafeIdentityChars.ReplaceAllString(cluster.Shoot.Status.TechnicalID, "-"); id != "" {
			return truncate(id, 200)
		}
		if cluster.Shoot.Name != "" {
			return "shoot-" + shortHash(cluster.Shoot.Namespace+"/"+cluster.Shoot.Name)
		}
	}
	return "exposure-" + shortHash(exp.Namespace+"/"+exp.Name)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// configError marks err as a configuration problem.
func configError(format string, args ...any) error {
	return openstack.NewConfigurationError(fmt.Errorf(format, args...))
}

// resolveConfig decodes, defaults and validates the provider config. Problems that need
// Neutron (subnet membership when the subnet is not in the Infrastructure status) are
// checked later.
func (a *Actuator) resolveConfig(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*v1alpha1.ExposureConfig, *Config, *InfrastructureStatus, ConfigSource, error) {
	var shoot = clusterShoot(cluster)
	raw, source := selectConfig(exp, shoot)
	cfg, err := decodeAndValidate(raw, source)
	if err != nil {
		return nil, nil, nil, source, err
	}
	if err := checkFamilyConfig(cfg, shoot, source); err != nil {
		return nil, nil, nil, source, err
	}

	infra, ready, err := a.infrastructureStatus(ctx, exp.Namespace)
	if err != nil {
		return nil, nil, nil, source, err
	}
	if !ready && len(ValidateResolved(ResolveConfig(cfg, infra), SubnetFacts{}, field.NewPath(string(source)))) > 0 {
		// Bootstrap: gardenadm reconciles the Infrastructure at the same time as the
		// exposure, and fails the step when lastError stays for 30 s. Wait for its status
		// here, with the exposure in Processing, rather than report an error.
		if infra, err = a.waitForInfrastructure(ctx, exp.Namespace); err != nil {
			return nil, nil, nil, source, err
		}
	}
	resolved := ResolveConfig(cfg, infra)
	if families := shootFamilies(shoot); hasIPv6(families) {
		subnets, errs := ResolveFamilies(FamilyInputs{Config: cfg, Infra: infra, IPFamilies: families, SubnetCIDRs: subnetCIDRs(infra)}, configPath(source))
		if len(errs) > 0 {
			return nil, nil, nil, source, configError("fix the provider config or the Infrastructure: %w", errs.ToAggregate())
		}
		applyFamilies(resolved, subnets, resolved.NetworkID)
	}
	return cfg, resolved, infra, source, nil
}

// waitForInfrastructure polls the cache until the Infrastructure in the namespace has a
// providerStatus, at most InfrastructureWait.
func (a *Actuator) waitForInfrastructure(ctx context.Context, namespace string) (*InfrastructureStatus, error) {
	var infra *InfrastructureStatus
	err := wait.PollUntilContextTimeout(ctx, time.Second, a.opts.InfrastructureWait, true, func(ctx context.Context) (bool, error) {
		status, ready, err := a.infrastructureStatus(ctx, namespace)
		infra = status
		return ready, err
	})
	if wait.Interrupted(err) {
		return nil, configError("the Infrastructure in %s has reported no status within %s, and the provider config alone does not name the network, subnet and floating pool: "+
			"wait for the Infrastructure, or set them in the provider config", namespace, a.opts.InfrastructureWait)
	}
	return infra, err
}

func clusterShoot(cluster *extensionscontroller.Cluster) *gardencorev1beta1.Shoot {
	if cluster == nil {
		return nil
	}
	return cluster.Shoot
}

// infrastructureStatus reads the providerStatus of the Infrastructure in the namespace;
// ready is false while there is no Infrastructure or it has reported no status yet. An
// Infrastructure that is not ready gives an empty status: every field must then be in the
// provider config.
func (a *Actuator) infrastructureStatus(ctx context.Context, namespace string) (status *InfrastructureStatus, ready bool, err error) {
	list := &extensionsv1alpha1.InfrastructureList{}
	if err := a.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, false, fmt.Errorf("listing the Infrastructure in %s: %w", namespace, err)
	}
	if len(list.Items) == 0 {
		return &InfrastructureStatus{}, false, nil
	}
	slices.SortFunc(list.Items, func(x, y extensionsv1alpha1.Infrastructure) int { return strings.Compare(x.Name, y.Name) })
	raw := list.Items[0].Status.ProviderStatus
	if raw == nil || (len(raw.Raw) == 0 && raw.Object == nil) {
		return &InfrastructureStatus{}, false, nil
	}
	status, err = DecodeInfrastructureStatus(raw)
	if err != nil {
		return nil, false, configError("the Infrastructure %s/%s has an unreadable providerStatus: %w", namespace, list.Items[0].Name, err)
	}
	return status, true, nil
}

// cloudProfileConfig is the part of provider-openstack's CloudProfileConfig this extension
// reads.
type cloudProfileConfig struct {
	KeyStoneURL           string  `json:"keystoneURL"`
	KeyStoneCACert        *string `json:"keystoneCACert"`
	KeyStoneForceInsecure bool    `json:"keystoneForceInsecure"`
	KeyStoneURLs          []struct {
		Region string  `json:"region"`
		URL    string  `json:"url"`
		CACert *string `json:"caCert"`
	} `json:"keystoneURLs"`
}

// keystone is what the CloudProfile says about the Keystone of a region.
type keystone struct {
	url      string
	caCert   string
	insecure bool
}

// cloudProfileKeystone reads the Keystone URL, CA bundle and keystoneForceInsecure of the
// region from the CloudProfile, as provider-openstack does: the region's keystoneURLs entry
// wins over keystoneURL, its caCert over keystoneCACert.
func cloudProfileKeystone(cluster *extensionscontroller.Cluster, region string) (keystone, error) {
	if cluster == nil || cluster.CloudProfile == nil || cluster.CloudProfile.Spec.ProviderConfig == nil || len(cluster.CloudProfile.Spec.ProviderConfig.Raw) == 0 {
		return keystone{}, nil
	}
	cfg := &cloudProfileConfig{}
	if err := json.Unmarshal(cluster.CloudProfile.Spec.ProviderConfig.Raw, cfg); err != nil {
		return keystone{}, configError("the CloudProfile's providerConfig is unreadable: %w", err)
	}
	k := keystone{url: cfg.KeyStoneURL, insecure: cfg.KeyStoneForceInsecure}
	if cfg.KeyStoneCACert != nil {
		k.caCert = *cfg.KeyStoneCACert
	}
	for _, u := range cfg.KeyStoneURLs {
		if u.Region != region {
			continue
		}
		if u.URL != "" {
			k.url = u.URL
		}
		if u.CACert != nil {
			k.caCert = *u.CACert
		}
		break
	}
	return k, nil
}

// resolveAuth reads the credentials Secret and determines region, Keystone URL and the
// CloudProfile's TLS settings.
func (a *Actuator) resolveAuth(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (openstack.AuthConfig, string, error) {
	ref := exp.Spec.CredentialsRef
	if ref == nil || ref.Name == "" {
		return openstack.AuthConfig{}, "", configError("spec.credentialsRef is not set: reference the Secret with the OpenStack credentials")
	}
	if ref.Kind != "" && ref.Kind != "Secret" {
		return openstack.AuthConfig{}, "", configError("spec.credentialsRef must reference a Secret, not a %s", ref.Kind)
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = exp.Namespace
	}
	secret := &corev1.Secret{}
	// Through the API reader: the cached client would start an informer on every Secret of
	// the namespace (and need list/watch on them).
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return openstack.AuthConfig{}, "", configError("the credentials Secret %s/%s does not exist: create it or fix spec.credentialsRef", namespace, ref.Name)
		}
		return openstack.AuthConfig{}, "", fmt.Errorf("reading the credentials Secret %s/%s: %w", namespace, ref.Name, err)
	}
	creds, err := openstack.CredentialsFromSecretData(secret.Data)
	if err != nil {
		return openstack.AuthConfig{}, "", configError("fix the credentials Secret %s/%s: %w", namespace, ref.Name, err)
	}

	shoot := clusterShoot(cluster)
	if shoot == nil || shoot.Spec.Region == "" {
		return openstack.AuthConfig{}, "", configError("the Cluster has no shoot with a region")
	}
	ks, err := cloudProfileKeystone(cluster, shoot.Spec.Region)
	if err != nil {
		return openstack.AuthConfig{}, "", err
	}
	if creds.AuthURL == "" && ks.url == "" {
		return openstack.AuthConfig{}, "", configError("no Keystone URL: set key %q in the credentials Secret or keystoneURL(s) in the CloudProfile's providerConfig", openstack.KeyAuthURL)
	}
	auth := openstack.AuthConfig{
		Credentials:        creds,
		AuthURL:            ks.url,
		Region:             shoot.Spec.Region,
		CloudProfileCACert: ks.caCert,
		ForceInsecure:      ks.insecure,
	}
	return auth, secretVersion(secret), nil
}

// secretVersion changes whenever the Secret is replaced or updated, and reveals nothing
// about its data.
func secretVersion(secret *corev1.Secret) string {
	return string(secret.UID) + "/" + secret.ResourceVersion
}

// controlPlaneNodes lists the control-plane Nodes with their InternalIP, sorted by name.
func (a *Actuator) controlPlaneNodes(ctx context.Context) ([]controlPlaneNode, error) {
	list := &corev1.NodeList{}
	if err := a.client.List(ctx, list, client.HasLabels{LabelControlPlane}); err != nil {
		return nil, fmt.Errorf("listing the control-plane Nodes: %w", err)
	}
	var nodes []controlPlaneNode
	for _, n := range list.Items {
		var ips []string
		for _, addr := range n.Status.Addresses {
			if addr.Type == corev1.NodeInternalIP {
				ips = append(ips, addr.Address)
			}
		}
		if len(ips) > 0 {
			nodes = append(nodes, controlPlaneNode{Name: n.Name, IP: ips[0], OtherIPs: ips[1:], UID: n.UID, pairLabel: n.Labels[agentrollout.PairLabel]})
		}
	}
	slices.SortFunc(nodes, func(x, y controlPlaneNode) int { return strings.Compare(x.Name, y.Name) })
	return nodes, nil
}

// validateAgainstNeutron checks what only Neutron knows (subnet membership and range)
// before anything is created.
func (a *Actuator) validateAgainstNeutron(ctx context.Context, network networking.Neutron, in *inputs) error {
	cfg := in.config
	subnet := SubnetFacts{NetworkID: cfg.SubnetNetworkID, CIDR: cfg.SubnetCIDR}
	if cfg.SubnetID != "" && cfg.SubnetCIDR == "" {
		s, err := network.GetSubnet(ctx, cfg.SubnetID)
		if err != nil {
			if openstack.IsNotFound(err) {
				return configError("subnet %s does not exist: fix subnetID in the provider config or the Infrastructure", cfg.SubnetID)
			}
			return err
		}
		subnet = SubnetFacts{NetworkID: s.NetworkID, CIDR: s.CIDR}
	}
	errs := ValidateResolved(cfg, subnet, configPath(in.source))
	if len(errs) == 0 {
		return a.resolveFloatingPool(ctx, network, in)
	}
	if cfg.NetworkID != "" && subnet.NetworkID != "" && subnet.NetworkID != cfg.NetworkID {
		// Tell a network that does not exist from a subnet in another network.
		if _, err := network.GetNetwork(ctx, cfg.NetworkID); openstack.IsNotFound(err) {
			return configError("network %s does not exist: fix networkID in the provider config or the Infrastructure", cfg.NetworkID)
		}
	}
	return configError("fix the provider config: %w", errs.ToAggregate())
}

// resolveFloatingPool looks the floating pool up by name before anything is created, while
// the exposure has no floating IP yet (a pool that does not exist is a configuration error,
// not a VIP port without a floating IP); the ID found is used for the allocation.
func (a *Actuator) resolveFloatingPool(ctx context.Context, network networking.Neutron, in *inputs) error {
	cfg := in.config
	if cfg.InternalOnly || cfg.FloatingIP != "" || cfg.FloatingNetworkID != "" || in.status.FloatingIPID != "" {
		return nil
	}
	id, err := network.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
	if err != nil {
		return err
	}
	in.floatingNetworkID = id
	return nil
}

// namespaceUID reads the UID of the exposure's Namespace, part of the mark of its VIP port
// (networking.Mark.Namespace), through the API reader: one read, no informer on
// Namespaces.
func (a *Actuator) namespaceUID(ctx context.Context, name string) (string, error) {
	ns := &corev1.Namespace{}
	if err := a.reader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return "", fmt.Errorf("reading the Namespace %s: %w", name, err)
	}
	return string(ns.UID), nil
}
