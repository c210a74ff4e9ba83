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
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file gathers a reconciliation's inputs, top-down: gatherInputs, then its steps in
// the order it takes them (the provider config with the Infrastructure's defaults and the
// IP families, the credentials, the control-plane Nodes, the mark), then
// validateAgainstNeutron, the checks only Neutron can answer, before the first write.

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

// frontDoor is what the exposure asks of Neutron; floatingNetworkID is the pool that
// validateAgainstNeutron resolved from its name.
func (in *inputs) frontDoor(floatingNetworkID string) *networking.FrontDoor {
	return &networking.FrontDoor{UID: in.uid, Mark: in.mark, Spec: in.config.Spec, FloatingNetworkID: floatingNetworkID, RecordFirst: in.recordFirst}
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

// gatherInputs resolves config, credentials, Infrastructure and control-plane Nodes.
// Everything is validated here, before the first side effect.
func (a *Actuator) gatherInputs(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster, status *v1alpha1.ExposureStatus) (*inputs, error) {
	if p := exp.Spec.Port; p < 1 || p > 65535 {
		return nil, configError("spec.port %d is not a TCP port (1-65535): set it to the port of the kube-apiserver", p)
	}
	raw, cfg, infra, source, err := a.resolveConfig(ctx, exp, cluster)
	if err != nil {
		return nil, err
	}
	auth, secretHash, err := a.resolveAuth(ctx, exp, cluster)
	if err != nil {
		return nil, err
	}
	nodes, err := a.controlPlaneNodes(ctx)
	if err != nil {
		return nil, err
	}
	m := networking.MarkOf(status, clusterIdentity(exp, cluster), exp.UID, clusterShoot(cluster))
	if m.Namespace, err = a.namespaceUID(ctx, exp.Namespace); err != nil {
		return nil, err
	}
	var recordFirst func(*v1alpha1.ExposureStatus) error
	if status.Identity == "" {
		recordFirst = func(s *v1alpha1.ExposureStatus) error { return a.patchStatus(ctx, exp, s) }
	}
	return &inputs{
		uid:         exp.UID,
		namespace:   exp.Namespace,
		status:      status,
		identity:    m.Identity,
		mark:        m,
		source:      source,
		raw:         raw,
		config:      cfg,
		infra:       infra,
		auth:        auth,
		secretHash:  secretHash,
		port:        exp.Spec.Port,
		nodes:       nodes,
		event:       func(eventType, reason, format string, args ...any) { a.event(exp, eventType, reason, format, args...) },
		recordFirst: recordFirst,
	}, nil
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
	if !ready && len(ValidateResolved(ResolveConfig(cfg, infra), SubnetFacts{}, configPath(source))) > 0 {
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

// selectConfig returns the raw provider config: the exposure's own, else the one of the
// shoot's control-plane worker pool (gardenadm does not copy it into the exposure).
func selectConfig(exp *extensionsv1alpha1.SelfHostedShootExposure, shoot *gardencorev1beta1.Shoot) (*runtime.RawExtension, ConfigSource) {
	if exp.Spec.ProviderConfig != nil && len(exp.Spec.ProviderConfig.Raw) > 0 {
		return exp.Spec.ProviderConfig, SourceExposure
	}
	if shoot == nil {
		return nil, SourceNone
	}
	pool := v1beta1helper.ControlPlaneWorkerPoolForShoot(shoot.Spec.Provider.Workers)
	if pool == nil || pool.ControlPlane == nil || pool.ControlPlane.Exposure == nil || pool.ControlPlane.Exposure.Extension == nil {
		return nil, SourceNone
	}
	if raw := pool.ControlPlane.Exposure.Extension.ProviderConfig; raw != nil && len(raw.Raw) > 0 {
		return raw, SourceShoot
	}
	return nil, SourceNone
}

// decodeAndValidate decodes the provider config strictly and checks it as given; the error
// is the one the exposure's status shows.
func decodeAndValidate(raw *runtime.RawExtension, source ConfigSource) (*v1alpha1.ExposureConfig, error) {
	cfg, err := DecodeConfig(raw)
	if err != nil {
		return nil, configError("the provider config in %s is invalid: %w", source, err)
	}
	if errs := ValidateConfig(cfg, configPath(source)); len(errs) > 0 {
		return nil, configError("fix the provider config: %w", errs.ToAggregate())
	}
	return cfg, nil
}

// checkFamilyConfig refuses, before any side effect, what this actuator does not build: a
// subnetIDs list (its subnets' families would need Neutron before the immutability rule;
// the Infrastructure's nodes and nodes-ipv6 subnets are used instead), an IPv6 vipAddress
// on an IPv4-only shoot, and an IPv6 floating IP (Neutron has none).
func checkFamilyConfig(cfg *v1alpha1.ExposureConfig, shoot *gardencorev1beta1.Shoot, source ConfigSource) error {
	path := configPath(source)
	if len(cfg.SubnetIDs) > 0 {
		return configError("fix the provider config: %s is not supported by this version: it takes the VIP's subnet of each IP family from the Infrastructure (purposes nodes and nodes-ipv6); remove %s", path.Child("subnetIDs"), path.Child("subnetIDs"))
	}
	if cfg.VIPAddress != nil && !hasIPv6(shootFamilies(shoot)) {
		if vip, err := netip.ParseAddr(*cfg.VIPAddress); err == nil && !vip.Unmap().Is4() {
			return configError("fix the provider config: %s %s is IPv6, but the shoot's ipFamilies are [IPv4]", path.Child("vipAddress"), *cfg.VIPAddress)
		}
	}
	if cfg.FloatingIP != nil {
		if fip, err := netip.ParseAddr(*cfg.FloatingIP); err == nil && !fip.Unmap().Is4() {
			return configError("fix the provider config: %s %s is IPv6, and Neutron has no IPv6 floating IPs", path.Child("floatingIP"), *cfg.FloatingIP)
		}
	}
	return nil
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

// ResolveConfig applies the defaults of the InfrastructureStatus to the provider config.
func ResolveConfig(cfg *v1alpha1.ExposureConfig, infra *InfrastructureStatus) *Config {
	c := &Config{
		Spec: networking.Spec{
			NetworkID:         deref(cfg.NetworkID),
			SubnetID:          deref(cfg.SubnetID),
			FloatingNetworkID: deref(cfg.FloatingNetworkID),
			FloatingPoolName:  deref(cfg.FloatingPoolName),
			FloatingIP:        deref(cfg.FloatingIP),
			VIPAddress:        deref(cfg.VIPAddress),
			InternalOnly:      cfg.InternalOnly != nil && *cfg.InternalOnly,
		},
		ProbeFloatingIP: cfg.ProbeFloatingIP == nil || *cfg.ProbeFloatingIP,
		Agent:           cfg.Agent,
	}
	if c.NetworkID == "" {
		c.NetworkID = infra.Networks.ID
	}
	if c.SubnetID == "" {
		if s := infra.nodeSubnet(); s != nil {
			c.SubnetID = s.ID
		}
	}
	if s := infra.subnet(c.SubnetID); s != nil && infra.Networks.ID != "" {
		c.SubnetCIDR, c.SubnetNetworkID = s.CIDR, infra.Networks.ID
	}
	if !c.InternalOnly && c.FloatingNetworkID == "" {
		pool := infra.Networks.FloatingPool
		switch c.FloatingPoolName {
		case "":
			c.FloatingNetworkID, c.FloatingPoolName = pool.ID, pool.Name
		case pool.Name:
			c.FloatingNetworkID = pool.ID
		}
	}
	return c
}

// FamilyInputs is what ResolveFamilies decides from.
type FamilyInputs struct {
	Config *v1alpha1.ExposureConfig
	Infra  *InfrastructureStatus
	// IPFamilies is the shoot's spec.networking.ipFamilies, in its order (empty: IPv4).
	IPFamilies []gardencorev1beta1.IPFamily
	// SubnetCIDRs maps every subnet ID named by the config or the Infrastructure to its CIDR,
	// from the InfrastructureStatus or read from Neutron by the caller; the family of a subnet
	// is its CIDR's.
	SubnetCIDRs map[string]string
}

// ResolveFamilies gives one subnet per IP family of the shoot, in the shoot's order. The
// subnets named in the config come first, then the Infrastructure's node subnets. All the
// errors are found here, before any side effect (fldPath is the provider config's root).
func ResolveFamilies(in FamilyInputs, fldPath *field.Path) ([]FamilySubnet, field.ErrorList) {
	cfg := in.Config
	families := in.IPFamilies
	if len(families) == 0 {
		families = []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4}
	}
	var errs field.ErrorList
	explicit := cfg.SubnetIDs
	if cfg.SubnetID != nil {
		if len(cfg.SubnetIDs) > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("subnetIDs"), "must not be set together with subnetID"))
		}
		explicit = []string{*cfg.SubnetID}
	}
	chosen := map[gardencorev1beta1.IPFamily]FamilySubnet{}
	for i, id := range explicit {
		path := fldPath.Child("subnetIDs").Index(i)
		if cfg.SubnetID != nil {
			path = fldPath.Child("subnetID")
		}
		prefix, err := netip.ParsePrefix(in.SubnetCIDRs[id])
		if err != nil {
			errs = append(errs, field.Invalid(path, id, "the subnet's CIDR is unknown"))
			continue
		}
		family := familyOf(prefix.Addr())
		if _, dup := chosen[family]; dup {
			errs = append(errs, field.Invalid(path, id, fmt.Sprintf("a second %s subnet: give at most one subnet per IP family", family)))
			continue
		}
		if !slices.Contains(families, family) {
			errs = append(errs, field.Invalid(path, id, fmt.Sprintf("the subnet is %s, but the shoot's ipFamilies are %v", family, families)))
			continue
		}
		chosen[family] = FamilySubnet{Family: family, SubnetID: id, CIDR: prefix}
	}
	for _, purpose := range []string{PurposeNodes, PurposeNodesIPv6} {
		for _, s := range in.Infra.Networks.Subnets {
			if s.Purpose != purpose {
				continue
			}
			prefix, err := netip.ParsePrefix(s.CIDR)
			if err != nil {
				prefix, err = netip.ParsePrefix(in.SubnetCIDRs[s.ID])
			}
			if err != nil {
				continue
			}
			if family := familyOf(prefix.Addr()); slices.Contains(families, family) {
				if _, ok := chosen[family]; !ok {
					chosen[family] = FamilySubnet{Family: family, SubnetID: s.ID, CIDR: prefix}
				}
			}
		}
	}
	var out []FamilySubnet
	for _, family := range families {
		fs, ok := chosen[family]
		if !ok {
			errs = append(errs, field.Required(fldPath.Child("subnetIDs"), fmt.Sprintf("the shoot's ipFamilies include %s, but neither the provider config nor the Infrastructure status names an %s subnet", family, family)))
			continue
		}
		out = append(out, fs)
	}
	errs = append(errs, validateFamilyAddresses(cfg, families, out, fldPath)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// validateFamilyAddresses checks the pinned VIP and the floating IP settings against the
// families, and pins the VIP on its family's subnet.
func validateFamilyAddresses(cfg *v1alpha1.ExposureConfig, families []gardencorev1beta1.IPFamily, subnets []FamilySubnet, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cfg.VIPAddress != nil {
		if vip, err := netip.ParseAddr(*cfg.VIPAddress); err == nil {
			i := slices.IndexFunc(subnets, func(s FamilySubnet) bool { return s.Family == familyOf(vip) })
			switch {
			case i < 0:
				errs = append(errs, field.Invalid(fldPath.Child("vipAddress"), *cfg.VIPAddress, fmt.Sprintf("the address is %s, but the shoot's ipFamilies are %v", familyOf(vip), families)))
			case !subnets[i].CIDR.Contains(vip):
				errs = append(errs, field.Invalid(fldPath.Child("vipAddress"), *cfg.VIPAddress, fmt.Sprintf("must be in the subnet's range %s", subnets[i].CIDR)))
			default:
				subnets[i].VIPAddress = vip.String()
			}
		}
	}
	if cfg.FloatingIP != nil {
		if fip, err := netip.ParseAddr(*cfg.FloatingIP); err == nil && !fip.Unmap().Is4() {
			errs = append(errs, field.Invalid(fldPath.Child("floatingIP"), *cfg.FloatingIP, "Neutron has no IPv6 floating IPs: the floating IP must be an IPv4 address (the IPv6 VIP is itself the front door)"))
		}
	}
	if !slices.Contains(families, gardencorev1beta1.IPFamilyIPv4) {
		for _, f := range []namedField{{"floatingIP", cfg.FloatingIP}, {"floatingPoolName", cfg.FloatingPoolName}, {"floatingNetworkID", cfg.FloatingNetworkID}} {
			if f.value != nil {
				errs = append(errs, field.Forbidden(fldPath.Child(f.name), "an IPv6-only exposure has no floating IP (Neutron has no IPv6 floating IPs): the IPv6 VIP is the front door"))
			}
		}
	}
	return errs
}

// subnetCIDRs maps the Infrastructure's subnets to their CIDRs.
func subnetCIDRs(infra *InfrastructureStatus) map[string]string {
	m := map[string]string{}
	for _, s := range infra.Networks.Subnets {
		m[s.ID] = s.CIDR
	}
	return m
}

// applyFamilies places the front door on the resolved subnets: the IPv4 subnet (if any)
// is the VIP port's first fixed IP, so that vipAddress, the floating IP and the pair label
// keep meaning the IPv4 VIP; the other family's subnet is in OtherSubnets. An IPv6-only
// exposure has no floating IP: its IPv6 VIP is the front door, as for internalOnly.
func applyFamilies(c *Config, families []FamilySubnet, networkID string) {
	c.Families = families
	first := slices.IndexFunc(families, func(f FamilySubnet) bool { return f.Family == gardencorev1beta1.IPFamilyIPv4 })
	if first < 0 {
		first = 0
		c.InternalOnly = true
		c.FloatingNetworkID, c.FloatingPoolName, c.FloatingIP = "", "", ""
	}
	c.SubnetID, c.VIPAddress = families[first].SubnetID, families[first].VIPAddress
	c.SubnetCIDR, c.SubnetNetworkID = families[first].CIDR.String(), networkID
	c.OtherSubnets = nil
	for i, f := range families {
		if i != first {
			c.OtherSubnets = append(c.OtherSubnets, networking.SubnetVIP{SubnetID: f.SubnetID, VIPAddress: f.VIPAddress})
		}
	}
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

// validateAgainstNeutron checks what only Neutron knows (subnet membership and range)
// before anything is created, and returns the floating pool resolved from its name.
func (a *Actuator) validateAgainstNeutron(ctx context.Context, network networking.Neutron, in *inputs) (string, error) {
	cfg := in.config
	subnet := SubnetFacts{NetworkID: cfg.SubnetNetworkID, CIDR: cfg.SubnetCIDR}
	if cfg.SubnetID != "" && cfg.SubnetCIDR == "" {
		s, err := network.GetSubnet(ctx, cfg.SubnetID)
		if err != nil {
			if openstack.IsNotFound(err) {
				return "", configError("subnet %s does not exist: fix subnetID in the provider config or the Infrastructure", cfg.SubnetID)
			}
			return "", err
		}
		subnet = SubnetFacts{NetworkID: s.NetworkID, CIDR: s.CIDR}
	}
	errs := ValidateResolved(cfg, subnet, configPath(in.source))
	if len(errs) == 0 {
		return resolveFloatingPool(ctx, network, in)
	}
	if cfg.NetworkID != "" && subnet.NetworkID != "" && subnet.NetworkID != cfg.NetworkID {
		// Tell a network that does not exist from a subnet in another network.
		if _, err := network.GetNetwork(ctx, cfg.NetworkID); openstack.IsNotFound(err) {
			return "", configError("network %s does not exist: fix networkID in the provider config or the Infrastructure", cfg.NetworkID)
		}
	}
	return "", configError("fix the provider config: %w", errs.ToAggregate())
}

// resolveFloatingPool looks the floating pool up by name before anything is created, while
// the exposure has no floating IP yet (a pool that does not exist is a configuration error,
// not a VIP port without a floating IP); the ID found is used for the allocation.
func resolveFloatingPool(ctx context.Context, network networking.Neutron, in *inputs) (string, error) {
	cfg := in.config
	if cfg.InternalOnly || cfg.FloatingIP != "" || cfg.FloatingNetworkID != "" || in.status.FloatingIPID != "" {
		return "", nil
	}
	return network.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
}

func clusterShoot(cluster *extensionscontroller.Cluster) *gardencorev1beta1.Shoot {
	if cluster == nil {
		return nil
	}
	return cluster.Shoot
}

// configError marks err as a configuration problem.
func configError(format string, args ...any) error {
	return openstack.NewConfigurationError(fmt.Errorf(format, args...))
}

// configPath is the root of the provider config's field paths.
func configPath(source ConfigSource) *field.Path {
	return field.NewPath(string(source))
}
