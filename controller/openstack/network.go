// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// TagExtension marks every Neutron resource that this extension created.
const TagExtension = "kube-vip.extensions.gardener.cloud"

// ClusterTag is the tag that marks the resources of one cluster; identity must be unique
// per cluster and free of commas.
func ClusterTag(identity string) string {
	return "kube-vip-cluster=" + identity
}

// OwnerTag is the tag that names the SelfHostedShootExposure (by the UID recorded at its
// first creation) that owns a VIP port.
func OwnerTag(uid string) string {
	return OwnerTagPrefix + uid
}

// OwnerTagPrefix starts every OwnerTag.
const OwnerTagPrefix = "kube-vip-owner="

// ShootTag is the tag that names the Shoot (by its status.uid, stable for the life of the
// cluster) whose VIP port it is; it proves a port to be the cluster's own when the
// exposure object was lost and created again with a new UID.
func ShootTag(uid string) string {
	return ShootTagPrefix + uid
}

// ShootTagPrefix starts every ShootTag.
const ShootTagPrefix = "kube-vip-shoot="

// NamespaceTag is the tag that names the exposure's Namespace by its UID. The cluster's
// API server made that UID and keeps it in etcd, so a clone of a node's disk without the
// etcd data, or a copied /var/lib/gardenadm, does not carry it, while the Shoot's UID is
// a file there.
func NamespaceTag(uid string) string {
	return NamespaceTagPrefix + uid
}

// NamespaceTagPrefix starts every NamespaceTag.
const NamespaceTagPrefix = "kube-vip-namespace="

// maxRevisionRetries bounds the retries of a port update whose revision went stale.
const maxRevisionRetries = 5

// Network is an authenticated Neutron client with the idempotent operations the extension
// needs. Every method takes the caller's context and returns errors classified by Classify.
type Network struct {
	client *gophercloud.ServiceClient
	// rejected is told when Keystone no longer accepts the credentials, typically on the
	// re-authentication of a cached client (nil: nobody listens).
	rejected func(error)
}

// classify is Classify that tells n.rejected about credentials Keystone rejects.
func (n *Network) classify(err error, op string) error {
	return n.observe(Classify(err, op))
}

// classifyLookup is ClassifyLookup that tells n.rejected about rejected credentials.
func (n *Network) classifyLookup(err error, op string) error {
	return n.observe(ClassifyLookup(err, op))
}

func (n *Network) observe(err error) error {
	if n.rejected != nil && IsUnauthenticated(err) {
		n.rejected(err)
	}
	return err
}

// NewNetwork wraps a Neutron service client (tests and callers with their own client).
func NewNetwork(client *gophercloud.ServiceClient) *Network {
	return &Network{client: client}
}

// ServiceClient returns the underlying gophercloud client.
func (n *Network) ServiceClient() *gophercloud.ServiceClient { return n.client }

// GetNetwork reads a network.
func (n *Network) GetNetwork(ctx context.Context, id string) (*networks.Network, error) {
	network, err := networks.Get(ctx, n.client, id).Extract()
	if err != nil {
		return nil, n.classifyLookup(err, fmt.Sprintf("read network %s", id))
	}
	return network, nil
}

// FindExternalNetworkByName returns the ID of the external network (floating pool) with
// the given name.
func (n *Network) FindExternalNetworkByName(ctx context.Context, name string) (string, error) {
	external := true
	pages, err := networks.List(n.client, externalListOpts{ListOpts: networks.ListOpts{Name: name}, External: &external}).AllPages(ctx)
	if err != nil {
		return "", n.classify(err, fmt.Sprintf("look up floating pool %q", name))
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil {
		return "", n.classify(err, fmt.Sprintf("look up floating pool %q", name))
	}
	switch len(nets) {
	case 0:
		return "", NewConfigurationError(fmt.Errorf("floating pool %q does not exist: set floatingPoolName to an external network of the project", name))
	case 1:
		return nets[0].ID, nil
	default:
		return "", NewConfigurationError(fmt.Errorf("floating pool name %q is ambiguous (%d external networks): set floatingNetworkID instead", name, len(nets)))
	}
}

// externalListOpts adds router:external to networks.ListOpts. gophercloud's query builder
// does not descend into an embedded struct, so the embedded options are rendered by their
// own ToNetworkListQuery and the external filter is appended.
type externalListOpts struct {
	networks.ListOpts
	External *bool `q:"router:external"`
}

func (o externalListOpts) ToNetworkListQuery() (string, error) {
	base, err := o.ListOpts.ToNetworkListQuery()
	if err != nil {
		return "", err
	}
	ext, err := gophercloud.BuildQueryString(struct {
		External *bool `q:"router:external"`
	}{o.External})
	if err != nil {
		return "", err
	}
	if base == "" {
		return ext.String(), nil
	}
	if ext.RawQuery == "" {
		return base, nil
	}
	return base + "&" + ext.RawQuery, nil
}

// GetSubnet reads a subnet.
func (n *Network) GetSubnet(ctx context.Context, id string) (*subnets.Subnet, error) {
	s, err := subnets.Get(ctx, n.client, id).Extract()
	if err != nil {
		return nil, n.classifyLookup(err, fmt.Sprintf("read subnet %s", id))
	}
	return s, nil
}

// PortFilter selects ports; empty fields do not filter.
type PortFilter struct {
	NetworkID string
	Name      string
	// Tags must all be present on a port.
	Tags []string
	// FixedIPs selects ports with any of these addresses.
	FixedIPs []string
}

// ListPorts returns the ports that match the filter, in one request per page.
func (n *Network) ListPorts(ctx context.Context, f PortFilter) ([]ports.Port, error) {
	opts := ports.ListOpts{NetworkID: f.NetworkID, Name: f.Name, Tags: strings.Join(f.Tags, ",")}
	for _, ip := range f.FixedIPs {
		opts.FixedIPs = append(opts.FixedIPs, ports.FixedIPOpts{IPAddress: ip})
	}
	pages, err := ports.List(n.client, opts).AllPages(ctx)
	if err != nil {
		return nil, n.classify(err, "list ports")
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, n.classify(err, "list ports")
	}
	return list, nil
}

// GetPort reads a port.
func (n *Network) GetPort(ctx context.Context, id string) (*ports.Port, error) {
	p, err := ports.Get(ctx, n.client, id).Extract()
	if err != nil {
		return nil, n.classify(err, fmt.Sprintf("read port %s", id))
	}
	return p, nil
}

// VIPPortSpec describes the unbound port that reserves the virtual IP.
type VIPPortSpec struct {
	Name        string
	Description string
	NetworkID   string
	SubnetID    string
	// IPAddress is a fixed address; empty lets Neutron pick one from the subnet.
	IPAddress string
	// OtherFixedIPs are the VIPs of the other IP families: one subnet each, with an address
	// or empty for Neutron to pick.
	OtherFixedIPs []ports.IP
	// Tags are set on the port.
	Tags []string
}

// HasAllTags tells whether have contains every tag of want.
func HasAllTags(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

type taggedPortCreateOpts struct {
	ports.CreateOpts
	Tags []string
}

func (o taggedPortCreateOpts) ToPortCreateMap() (map[string]any, error) {
	body, err := o.CreateOpts.ToPortCreateMap()
	if err != nil {
		return nil, err
	}
	if len(o.Tags) > 0 {
		body["port"].(map[string]any)["tags"] = o.Tags
	}
	return body, nil
}

// CreateVIPPort creates the unbound VIP port (no device owner, no host) with its tags in
// the same request.
func (n *Network) CreateVIPPort(ctx context.Context, spec VIPPortSpec) (*ports.Port, error) {
	opts := taggedPortCreateOpts{
		CreateOpts: ports.CreateOpts{
			NetworkID:   spec.NetworkID,
			Name:        spec.Name,
			Description: spec.Description,
			FixedIPs:    append([]ports.IP{{SubnetID: spec.SubnetID, IPAddress: spec.IPAddress}}, spec.OtherFixedIPs...),
		},
		Tags: spec.Tags,
	}
	p, err := ports.Create(ctx, n.client, opts).Extract()
	if err != nil {
		return nil, n.classify(err, "create the VIP port")
	}
	return p, nil
}

// CheckVIPPort tells whether an existing VIP port fits the spec: the network and the VIP
// of an exposure cannot change once its port exists.
func CheckVIPPort(port *ports.Port, spec VIPPortSpec) error {
	if port.NetworkID != spec.NetworkID {
		return NewConfigurationError(fmt.Errorf("the VIP port %s is in network %s, not in %s: the network of an exposure cannot change", port.ID, port.NetworkID, spec.NetworkID))
	}
	if address := PortAddress(port, spec.SubnetID); address == "" || (spec.IPAddress != "" && address != spec.IPAddress) {
		return NewConfigurationError(fmt.Errorf("the VIP port %s has the address %s, not one matching subnet %s and vipAddress %q: "+
			"the VIP of an exposure cannot change once its port exists; restore subnetID and vipAddress in the provider config, or create a new exposure",
			port.ID, PortAddress(port, ""), spec.SubnetID, spec.IPAddress))
	}
	for _, ip := range spec.OtherFixedIPs {
		if address := PortAddress(port, ip.SubnetID); address == "" || (ip.IPAddress != "" && address != ip.IPAddress) {
			return NewConfigurationError(fmt.Errorf("the VIP port %s has no address matching subnet %s and VIP %q (it has %v): "+
				"the VIPs of an exposure cannot change once its port exists; restore the shoot's networking.ipFamilies, the Infrastructure's node subnets and vipAddress in the provider config, or create a new exposure",
				port.ID, ip.SubnetID, ip.IPAddress, port.FixedIPs))
		}
	}
	return nil
}

// PortAddress returns the port's first fixed IP in the subnet (any subnet if empty).
func PortAddress(p *ports.Port, subnetID string) string {
	for _, ip := range p.FixedIPs {
		if subnetID == "" || ip.SubnetID == subnetID {
			return ip.IPAddress
		}
	}
	return ""
}

// DeletePort deletes a port; a missing port is no error.
func (n *Network) DeletePort(ctx context.Context, id string) error {
	err := ports.Delete(ctx, n.client, id).ExtractErr()
	if err != nil && !IsNotFound(err) {
		return n.classify(err, fmt.Sprintf("delete port %s", id))
	}
	return nil
}

// ReplacePortTags sets the tags of a port.
func (n *Network) ReplacePortTags(ctx context.Context, id string, tags []string) error {
	_, err := attributestags.ReplaceAll(ctx, n.client, "ports", id, attributestags.ReplaceAllOpts{Tags: tags}).Extract()
	return n.classify(err, fmt.Sprintf("tag port %s", id))
}

// FloatingIPSpec describes the floating IP of the VIP port.
type FloatingIPSpec struct {
	FloatingNetworkID string
	PortID            string
	FixedIP           string
	Description       string
	// Address asks for this floating IP address; empty lets Neutron pick one.
	Address string
}

// CreateFloatingIP allocates a floating IP from the pool, associated with the port in the
// same request.
func (n *Network) CreateFloatingIP(ctx context.Context, spec FloatingIPSpec) (*floatingips.FloatingIP, error) {
	fip, err := floatingips.Create(ctx, n.client, floatingips.CreateOpts{
		FloatingNetworkID: spec.FloatingNetworkID,
		PortID:            spec.PortID,
		FixedIP:           spec.FixedIP,
		FloatingIP:        spec.Address,
		Description:       spec.Description,
	}).Extract()
	if err != nil {
		return nil, n.classify(err, "create the floating IP")
	}
	return fip, nil
}

// ListFloatingIPs returns the floating IPs that match the options.
func (n *Network) ListFloatingIPs(ctx context.Context, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(n.client, opts).AllPages(ctx)
	if err != nil {
		return nil, n.classify(err, "list floating IPs")
	}
	list, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, n.classify(err, "list floating IPs")
	}
	return list, nil
}

// GetFloatingIP reads a floating IP.
func (n *Network) GetFloatingIP(ctx context.Context, id string) (*floatingips.FloatingIP, error) {
	fip, err := floatingips.Get(ctx, n.client, id).Extract()
	if err != nil {
		return nil, n.classify(err, fmt.Sprintf("read floating IP %s", id))
	}
	return fip, nil
}

// FloatingIPsOfPort returns the floating IPs associated with the port.
func (n *Network) FloatingIPsOfPort(ctx context.Context, portID string) ([]floatingips.FloatingIP, error) {
	return n.ListFloatingIPs(ctx, floatingips.ListOpts{PortID: portID})
}

// FindFloatingIPByAddress returns the floating IP with the address, or a configuration
// error when the project has none.
func (n *Network) FindFloatingIPByAddress(ctx context.Context, address string) (*floatingips.FloatingIP, error) {
	list, err := n.ListFloatingIPs(ctx, floatingips.ListOpts{FloatingIP: address})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, NewConfigurationError(fmt.Errorf("floating IP %s is not allocated in the project: allocate it first or remove floatingIP from the providerConfig", address))
	}
	return &list[0], nil
}

// AssociateFloatingIP points the floating IP at the port.
func (n *Network) AssociateFloatingIP(ctx context.Context, id, portID string) (*floatingips.FloatingIP, error) {
	fip, err := floatingips.Update(ctx, n.client, id, floatingips.UpdateOpts{PortID: &portID}).Extract()
	if err != nil {
		return nil, n.classify(err, fmt.Sprintf("associate floating IP %s", id))
	}
	return fip, nil
}

// DisassociateFloatingIP detaches the floating IP from its port; a missing floating IP is
// no error.
func (n *Network) DisassociateFloatingIP(ctx context.Context, id string) error {
	// An empty string makes gophercloud send "port_id": null; a nil pointer sends nothing.
	_, err := floatingips.Update(ctx, n.client, id, floatingips.UpdateOpts{PortID: new(string)}).Extract()
	if err != nil && !IsNotFound(err) {
		return n.classify(err, fmt.Sprintf("disassociate floating IP %s", id))
	}
	return nil
}

// DeleteFloatingIP releases a floating IP; a missing one is no error.
func (n *Network) DeleteFloatingIP(ctx context.Context, id string) error {
	err := floatingips.Delete(ctx, n.client, id).ExtractErr()
	if err != nil && !IsNotFound(err) {
		return n.classify(err, fmt.Sprintf("delete floating IP %s", id))
	}
	return nil
}

// The VIP's allowed address pair is the bare address, which Neutron takes as a single host.
// It is the form ML2/OVN recognises when it decides that the unbound VIP port is a virtual
// port: its driver (neutron 21, Debian 12) keeps only bare addresses of a port's pairs, so an
// entry "VIP/32" leaves the VIP port a plain port, whose MAC the router then resolves the VIP
// to, and the floating IP never reaches the node holding the VIP (TestFloatingIPReachesTheVIPOnOVN).

// hostPrefix is the older form of the pair, the address with its host prefix ("VIP/32",
// "VIP/128"): still the extension's own, and rewritten to the bare address.
func hostPrefix(ip string) string {
	if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
		return ip + "/128"
	}
	return ip + "/32"
}

// isVIPPair tells whether an allowed address pair entry of a port with the MAC mac is the
// extension's pair for ip: exactly the host address ("ip" or its host prefix) with the
// port's own MAC, which Neutron fills in when a pair names none. A pair for the address
// with another MAC is a user's (e.g. a VRRP router's) and is neither rewritten nor removed.
func isVIPPair(pair ports.AddressPair, ip, mac string) bool {
	return (pair.IPAddress == ip || pair.IPAddress == hostPrefix(ip)) && (pair.MACAddress == "" || pair.MACAddress == mac)
}

// HasPair tells whether the port carries the extension's pair for ip.
func HasPair(p *ports.Port, ip string) bool {
	return slices.ContainsFunc(p.AllowedAddressPairs, func(pair ports.AddressPair) bool { return isVIPPair(pair, ip, p.MACAddress) })
}

// MergePair returns the pairs of a port with the MAC mac plus ip as a bare-address pair;
// every other pair is kept. The extension's entry of the older form "ip/32" is rewritten in
// place. changed is false when the bare pair is already present.
func MergePair(pairs []ports.AddressPair, ip, mac string) (merged []ports.AddressPair, changed bool) {
	if slices.ContainsFunc(pairs, func(p ports.AddressPair) bool { return p.IPAddress == ip && isVIPPair(p, ip, mac) }) {
		return pairs, false
	}
	merged = append([]ports.AddressPair{}, pairs...)
	if i := slices.IndexFunc(merged, func(p ports.AddressPair) bool { return p.IPAddress == hostPrefix(ip) && isVIPPair(p, ip, mac) }); i >= 0 {
		merged[i].IPAddress = ip
		return merged, true
	}
	return append(merged, ports.AddressPair{IPAddress: ip}), true
}

// RemovePair returns the pairs of a port with the MAC mac without the extension's pair for
// ip; every other pair is kept.
func RemovePair(pairs []ports.AddressPair, ip, mac string) (rest []ports.AddressPair, changed bool) {
	rest = []ports.AddressPair{}
	for _, pair := range pairs {
		if isVIPPair(pair, ip, mac) {
			changed = true
			continue
		}
		rest = append(rest, pair)
	}
	return rest, changed
}

// EnsurePair adds ip as a host allowed address pair to the port, keeping all other pairs.
// port is the caller's last read of the port; the update is conditional on its revision
// and re-read and retried when another writer was faster. updated tells whether a write
// happened.
func (n *Network) EnsurePair(ctx context.Context, port *ports.Port, ip string) (updated bool, err error) {
	return n.updatePairs(ctx, port, func(pairs []ports.AddressPair) ([]ports.AddressPair, bool) {
		return MergePair(pairs, ip, port.MACAddress)
	},
		fmt.Sprintf("add the VIP to the allowed address pairs of port %s", port.ID))
}

// RemovePairFromPort removes the host pair for ip from the port and keeps every other
// pair. A missing port is no error.
func (n *Network) RemovePairFromPort(ctx context.Context, port *ports.Port, ip string) (updated bool, err error) {
	updated, err = n.updatePairs(ctx, port, func(pairs []ports.AddressPair) ([]ports.AddressPair, bool) {
		return RemovePair(pairs, ip, port.MACAddress)
	},
		fmt.Sprintf("remove the VIP from the allowed address pairs of port %s", port.ID))
	if IsNotFound(err) {
		return false, nil
	}
	return updated, err
}

func (n *Network) updatePairs(ctx context.Context, port *ports.Port, mutate func([]ports.AddressPair) ([]ports.AddressPair, bool), op string) (bool, error) {
	current := port
	for attempt := 0; ; attempt++ {
		pairs, changed := mutate(current.AllowedAddressPairs)
		if !changed {
			// A re-read that needs no write is still the caller's newest view of the port:
			// its next change of the port (dual stack: the other VIP) starts from it.
			*port = *current
			return false, nil
		}
		revision := current.RevisionNumber
		updated, err := ports.Update(ctx, n.client, current.ID, ports.UpdateOpts{
			AllowedAddressPairs: &pairs,
			RevisionNumber:      &revision,
		}).Extract()
		if err == nil {
			*port = *updated
			return true, nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) || attempt+1 >= maxRevisionRetries {
			return false, n.classify(err, op)
		}
		// Someone else changed the port in between: read it again and merge anew.
		if current, err = ports.Get(ctx, n.client, port.ID).Extract(); err != nil {
			return false, n.classify(err, op)
		}
	}
}

// HasFixedIP tells whether the port holds ip as one of its fixed IPs.
func HasFixedIP(p *ports.Port, ip string) bool {
	for _, f := range p.FixedIPs {
		if f.IPAddress == ip {
			return true
		}
	}
	return false
}
