// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// DefaultVerifyInterval is how long the OpenStack resources of an unchanged exposure are
// trusted: a healthy exposure is requeued after it and then reads them back (port,
// floating IP, node ports: three GETs, no write when nothing drifted). Changes of the
// provider config, the Infrastructure or the control-plane Nodes reconcile at once, and
// gardener.cloud/operation=reconcile verifies at once.
const DefaultVerifyInterval = 5 * time.Minute

// DefaultInfrastructureWait is the default of ActuatorOptions.InfrastructureWait.
const DefaultInfrastructureWait = 5 * time.Minute

// AgentDeployer rolls out the kube-vip-agent; agentrollout.Deployer implements it.
type AgentDeployer interface {
	Deploy(ctx context.Context, spec agentrollout.Spec) error
	// Delete removes the agent; gone is false while agent pods remain.
	Delete(ctx context.Context, namespace string) (gone bool, err error)
	Status(ctx context.Context, namespace string) (*v1alpha1.AgentStatus, error)
}

// ActuatorOptions configure NewActuator.
type ActuatorOptions struct {
	// ClientFactory gives the Neutron clients. Required.
	ClientFactory openstack.ClientFactory
	// Agent rolls out the node agent. Default: agentrollout.New(mgr.GetClient()) reading
	// through the API reader, so that no cluster-wide informers for Pods are started.
	Agent AgentDeployer
	// AgentImage is the kube-vip-agent image.
	AgentImage string
	// KubeVIPImage is the default image of upstream kube-vip (agent.implementation
	// kube-vip); an exposure may override it with agent.image. Empty: such an exposure
	// must name its image.
	KubeVIPImage string
	// VerifyInterval, see DefaultVerifyInterval.
	VerifyInterval time.Duration
	// Clock is the clock for VerifyInterval and verifiedAt. Default: the real clock.
	Clock clock.PassiveClock
	// InfrastructureWait is how long a reconciliation waits, in Processing and without an
	// error, for the Infrastructure's status when the provider config alone is incomplete
	// (bootstrap: gardenadm reconciles both at once). Default: DefaultInfrastructureWait.
	InfrastructureWait time.Duration
	// MinBackoff and MaxBackoff bound the requeue delay after transient failures.
	// Defaults: 2s and 2m.
	MinBackoff, MaxBackoff time.Duration
	// FrontDoorProbe says how the front door is checked before Succeeded. Default:
	// FrontDoorTCP.
	FrontDoorProbe FrontDoorProbe
	// FrontDoorWait bounds the wait for the front door in one reconciliation. Default:
	// DefaultFrontDoorWait.
	FrontDoorWait time.Duration
	// AgentRefreshInterval, see DefaultAgentRefreshInterval.
	AgentRefreshInterval time.Duration
	// Dial opens the TCP connection of FrontDoorTCP. Default: a net.Dialer in the
	// controller's network namespace.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Events records Events on the exposures. Default: the manager's recorder.
	Events events.EventRecorder
}

// Actuator reconciles SelfHostedShootExposures of type kube-vip.
type Actuator struct {
	client client.Client
	reader client.Reader
	opts   ActuatorOptions
	events events.EventRecorder

	locks         exposureLocks
	verifications verificationRequests

	mu       sync.Mutex
	failures map[types.UID]int
}

var _ selfhostedshootexposure.Actuator = (*Actuator)(nil)

// NewActuator returns the actuator.
func NewActuator(mgr manager.Manager, opts ActuatorOptions) *Actuator {
	if opts.Agent == nil {
		opts.Agent = agentrollout.New(mgr.GetClient()).WithReader(mgr.GetAPIReader())
	}
	if opts.VerifyInterval == 0 {
		opts.VerifyInterval = DefaultVerifyInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.InfrastructureWait == 0 {
		opts.InfrastructureWait = DefaultInfrastructureWait
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 2 * time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 2 * time.Minute
	}
	if opts.FrontDoorProbe == "" {
		opts.FrontDoorProbe = FrontDoorTCP
	}
	if opts.FrontDoorWait == 0 {
		opts.FrontDoorWait = DefaultFrontDoorWait
	}
	if opts.AgentRefreshInterval == 0 {
		opts.AgentRefreshInterval = DefaultAgentRefreshInterval
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	if opts.Events == nil {
		opts.Events = mgr.GetEventRecorder("gardener-extension-kube-vip")
	}
	return &Actuator{
		client:   mgr.GetClient(),
		reader:   mgr.GetAPIReader(),
		opts:     opts,
		events:   opts.Events,
		failures: map[types.UID]int{},
	}
}

// Reconcile makes sure the VIP port, its floating IP and the allowed address pairs exist,
// rolls out the agent, waits until the front door works (see frontdoor.go) and returns
// the ingress (the floating IP, or the VIP when internal).
func (a *Actuator) Reconcile(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) ([]corev1.LoadBalancerIngress, error) {
	status, internalOnly, err := a.reconcileLocked(ctx, log, exp, cluster)
	if err == nil {
		// Without the lock: the node tracker may meanwhile add the pair that a new
		// control-plane node's agent needs to answer for the VIP.
		err = a.awaitFrontDoor(ctx, log, exp, status)
		if err == nil {
			// Published from now on: Gardener copies it into DNS once.
			status.Ingress = ingressOf(status, internalOnly)
		}
		unlock := a.locks.lock(exp.UID)
		if patchErr := a.patchStatus(ctx, exp, status); err == nil {
			err = patchErr
		}
		unlock()
	}
	return ingress(ingressOf(status, internalOnly)), a.finish(exp, err)
}

func (a *Actuator) reconcileLocked(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*v1alpha1.ExposureStatus, bool, error) {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	return a.reconcile(ctx, log, exp, cluster)
}

// reconcile is the whole flow up to the front door, top-down: gather the inputs, then the
// VIP port, its floating IP, the node ports' pairs, the agent, and the status. Policy
// (ownership, which changes are accepted) lives in policy.go; the front door in
// frontdoor.go; deletion in delete.go. It returns the status reached and whether the
// exposure is internal only.
func (a *Actuator) reconcile(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*v1alpha1.ExposureStatus, bool, error) {
	status, err := DecodeStatus(exp)
	if err != nil {
		return nil, false, err
	}
	// Gather: config, credentials, Infrastructure, control-plane Nodes. Everything is
	// validated here, before the first side effect.
	in, err := a.gatherInputs(ctx, exp, cluster, status)
	if err != nil {
		return status, false, err
	}
	internalOnly := in.config.InternalOnly
	if err := checkAddressChange(in.config, status); err != nil {
		return status, internalOnly, err
	}
	in.event = func(eventType, reason, format string, args ...any) { a.event(exp, eventType, reason, format, args...) }

	image, err := a.agentImage(in.config.Agent)
	if err != nil {
		return status, internalOnly, err
	}
	hash := in.hash(image)
	now := a.opts.Clock.Now()
	requested := a.verifications.take(exp.UID)
	if !requested && status.InputsHash == hash && statusComplete(status, in.config) && status.VerifiedAt != nil && now.Sub(status.VerifiedAt.Time) < a.opts.VerifyInterval {
		log.V(1).Info("Inputs unchanged and recently verified, no OpenStack call")
		// The same control-plane Nodes (the hash holds their UIDs) as when the recorded
		// node ports got the pair: a pair label removed meanwhile comes back.
		if err := a.syncPairLabels(ctx, log, status.VIPAddress, in.nodes, status.NodePorts, nil); err != nil {
			return status, internalOnly, err
		}
		if err := a.deployAgent(ctx, exp, in, status); err != nil {
			return status, internalOnly, err
		}
		return status, internalOnly, a.patchStatus(ctx, exp, status)
	}

	network, err := a.opts.ClientFactory.Network(ctx, in.auth)
	if err != nil {
		return status, internalOnly, err
	}
	desired, err := a.ensureOpenStack(ctx, log, network, in, status)
	if desired != nil {
		status = desired
	}
	a.setVerified(exp, status, err)
	if err != nil {
		// keep what was found or created so far
		status.InputsHash = ""
		if patchErr := a.patchStatus(ctx, exp, status); patchErr != nil {
			log.Error(patchErr, "Could not record the partial status")
		}
		return status, internalOnly, err
	}
	status.InputsHash = hash
	status.VerifiedAt = &metav1.Time{Time: now}

	if err := a.deployAgent(ctx, exp, in, status); err != nil {
		_ = a.patchStatus(ctx, exp, status)
		return status, internalOnly, err
	}
	return status, internalOnly, a.patchStatus(ctx, exp, status)
}

// gatherInputs resolves config, credentials, Infrastructure and control-plane Nodes.
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
	m := markOf(status, clusterIdentity(exp, cluster), exp.UID)
	return &inputs{
		status:     status,
		identity:   m.identity,
		mark:       m,
		source:     source,
		raw:        raw,
		config:     cfg,
		infra:      infra,
		auth:       auth,
		secretHash: secretHash,
		port:       exp.Spec.Port,
		nodes:      nodes,
	}, nil
}

func statusComplete(s *v1alpha1.ExposureStatus, cfg *Config) bool {
	if s.PortID == "" || s.VIPAddress == "" || s.Ingress == "" {
		return false
	}
	return cfg.InternalOnly || s.FloatingIPAddress != ""
}

func ingress(address string) []corev1.LoadBalancerIngress {
	if address == "" {
		return nil
	}
	return []corev1.LoadBalancerIngress{{IP: address}}
}

func vipPortSpec(in *inputs, status *v1alpha1.ExposureStatus) openstack.VIPPortSpec {
	address := in.config.VIPAddress
	if status.VIPAddress != "" {
		// Once there is a VIP, a lost port comes back with the same address.
		address = status.VIPAddress
	}
	return openstack.VIPPortSpec{
		Name:        vipPortName(in.identity),
		Description: in.mark.description(),
		NetworkID:   in.config.NetworkID,
		SubnetID:    in.config.SubnetID,
		IPAddress:   address,
		Tags:        in.mark.tags(),
	}
}

// ensureOpenStack brings the VIP port, floating IP and node pairs to the desired state and
// returns the new status. It returns the status reached so far together with an error.
func (a *Actuator) ensureOpenStack(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, old *v1alpha1.ExposureStatus) (*v1alpha1.ExposureStatus, error) {
	cfg := in.config
	if err := a.validateAgainstNeutron(ctx, network, in); err != nil {
		return nil, err
	}
	status := old.DeepCopy()
	status.Identity, status.Owner = in.identity, in.mark.owner
	status.NetworkID, status.SubnetID = cfg.NetworkID, cfg.SubnetID

	port, created, err := a.ensurePort(ctx, log, network, in, status)
	if err != nil {
		return status, err
	}

	// The floating IP and the node pairs are independent of each other: do them at once.
	var (
		wg        sync.WaitGroup
		fipErr    error
		nodePorts []v1alpha1.NodePort
		pairsErr  error
		vip       = status.VIPAddress
	)
	wg.Go(func() { fipErr = a.ensureFloatingIP(ctx, log, network, in, port, created, status) })
	wg.Go(func() {
		nodePorts, pairsErr = a.ensureNodePairs(ctx, log, network, pairSync{networkID: cfg.NetworkID, vip: vip, vipPortID: port.ID, nodes: in.nodes})
		if len(in.nodes) > 0 {
			// Pairs, then labels: the agent DaemonSet, applied after this, runs only on
			// labelled nodes, so it never starts where port security drops the VIP.
			pairsErr = errors.Join(pairsErr, a.syncPairLabels(ctx, log, vip, in.nodes, nodePorts, nil))
		}
	})
	wg.Wait()
	if pairsErr == nil && !slices.Equal(status.NodePorts, nodePorts) {
		in.record(eventNodePortsChanged, "The VIP %s is now an allowed address pair of the node ports %s", vip, nodePortNames(nodePorts))
	}
	status.NodePorts = nodePorts
	return status, errors.Join(fipErr, pairsErr)
}

// validateAgainstNeutron checks what only Neutron knows (subnet membership and range)
// before anything is created.
func (a *Actuator) validateAgainstNeutron(ctx context.Context, network *openstack.Network, in *inputs) error {
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
func (a *Actuator) resolveFloatingPool(ctx context.Context, network *openstack.Network, in *inputs) error {
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

// ensurePort returns the VIP port: the one recorded in the status, else the cluster's port
// found by name and tags, else a new one. A port lost out of band comes back with the
// recorded VIP, so the address never changes. Surplus ports of the cluster (a create whose
// response was lost and that committed after the retry had listed the ports) are deleted.
func (a *Actuator) ensurePort(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, status *v1alpha1.ExposureStatus) (*ports.Port, bool, error) {
	spec := vipPortSpec(in, status)
	named, err := network.ListPorts(ctx, openstack.PortFilter{Name: spec.Name})
	if err != nil {
		return nil, false, err
	}
	candidates := slices.DeleteFunc(openstack.VIPPortCandidates(named, spec), func(p ports.Port) bool { return in.mark.foreignOwner(&p) != "" })

	port, err := a.recordedPort(ctx, log, network, named, status, in.config.NetworkID)
	if err != nil {
		return nil, false, err
	}
	if port == nil && status.PortID == "" {
		if err := a.checkOneOwner(ctx, log, in, named); err != nil {
			return nil, false, err
		}
	}
	if port == nil && len(candidates) > 0 {
		port = pickVIPPort(candidates, status.VIPAddress)
		if err := openstack.CheckVIPPort(port, spec); err != nil {
			return nil, false, err
		}
	}
	created := false
	if port == nil {
		if port, err = network.CreateVIPPort(ctx, spec); err != nil {
			return nil, false, err
		}
		created = true
		log.Info("Created the VIP port", "port", port.ID, "vip", openstack.PortAddress(port, in.config.SubnetID))
		if status.PortID != "" {
			in.record(eventPortRecreated, "The VIP port %s was gone; created port %s with the same VIP %s", status.PortID, port.ID, openstack.PortAddress(port, in.config.SubnetID))
		} else {
			in.record(eventPortCreated, "Created the VIP port %s with the VIP %s", port.ID, openstack.PortAddress(port, in.config.SubnetID))
		}
	}
	// Recorded before anything else, so that a later failure does not lose the port.
	status.PortID = port.ID
	status.VIPAddress = openstack.PortAddress(port, in.config.SubnetID)

	if err := a.deleteSurplusPorts(ctx, log, network, candidates, port.ID); err != nil {
		return nil, false, err
	}
	return port, created, a.ensurePortTags(ctx, log, network, in, port)
}

// recordedPort returns the port recorded in the status (from the list, else read by ID),
// nil when there is none or it is gone.
func (a *Actuator) recordedPort(ctx context.Context, log logr.Logger, network *openstack.Network, named []ports.Port, status *v1alpha1.ExposureStatus, networkID string) (*ports.Port, error) {
	if status.PortID == "" {
		return nil, nil
	}
	var port *ports.Port
	if i := slices.IndexFunc(named, func(p ports.Port) bool { return p.ID == status.PortID }); i >= 0 {
		port = &named[i]
	} else {
		p, err := network.GetPort(ctx, status.PortID) // renamed out of band
		switch {
		case openstack.IsNotFound(err):
			log.Info("The recorded VIP port is gone; creating it again with the same VIP", "port", status.PortID, "vip", status.VIPAddress)
			return nil, nil
		case err != nil:
			return nil, err
		}
		port = p
	}
	return port, checkRecordedPort(port, status, networkID)
}

// pickVIPPort chooses among the cluster's ports when none is recorded: the one holding the
// recorded VIP, else the oldest.
func pickVIPPort(candidates []ports.Port, vip string) *ports.Port {
	best := &candidates[0]
	for i := range candidates {
		p := &candidates[i]
		if vip != "" && hasFixedIP(p, vip) {
			return p
		}
		if p.CreatedAt.Before(best.CreatedAt) {
			best = p
		}
	}
	return best
}

// deleteSurplusPorts deletes the cluster's ports other than keep that carry no floating IP;
// one with a floating IP is left for an operator, named in the error.
func (a *Actuator) deleteSurplusPorts(ctx context.Context, log logr.Logger, network *openstack.Network, candidates []ports.Port, keep string) error {
	var errs []error
	for _, p := range candidates {
		if p.ID == keep {
			continue
		}
		fips, err := network.FloatingIPsOfPort(ctx, p.ID)
		if err != nil {
			return err
		}
		if len(fips) > 0 {
			errs = append(errs, v1beta1helper.NewErrorWithCodes(fmt.Errorf("port %s is a second VIP port of this cluster and carries floating IP %s; the live VIP port is %s: delete port %s after checking it",
				p.ID, fips[0].FloatingIP, keep, p.ID), gardencorev1beta1.ErrorInfraDependencies))
			continue
		}
		log.Info("Deleting a surplus VIP port of the cluster (a create that committed late)", "port", p.ID, "keep", keep)
		if err := network.DeletePort(ctx, p.ID); err != nil && !openstack.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ensurePortTags puts the cluster's tags on the port. Neutron without the
// tag_ports_during_bulk_creation extension driver ignores tags in the create request, and
// tags may have been edited out of band.
func (a *Actuator) ensurePortTags(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port) error {
	if openstack.HasAllTags(port.Tags, in.mark.tags()) && in.mark.foreignOwner(port) == "" {
		return nil
	}
	tags := in.mark.withTags(port.Tags)
	if len(port.Tags) > 0 {
		log.Info("Restoring the cluster's tags on the VIP port", "port", port.ID, "had", port.Tags)
	}
	if err := network.ReplacePortTags(ctx, port.ID, tags); err != nil {
		return err
	}
	port.Tags = tags
	return nil
}

// ensureFloatingIP keeps, adopts, re-associates or (only when the exposure has none yet)
// allocates the floating IP of the VIP port and records it in status. It never releases
// one: a change of address is refused by checkAddressChange before this runs.
func (a *Actuator) ensureFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port, portCreated bool, status *v1alpha1.ExposureStatus) error {
	cfg := in.config
	if cfg.InternalOnly {
		return nil
	}
	if status.FloatingIPID != "" {
		return a.keepFloatingIP(ctx, log, network, in, port, status)
	}
	if cfg.FloatingIP != "" {
		return a.adoptFloatingIP(ctx, log, network, cfg.FloatingIP, port, status)
	}
	fip, err := a.findOwnedFloatingIP(ctx, log, network, in, port, portCreated)
	if err != nil {
		return err
	}
	if fip == nil {
		floatingNetworkID, err := floatingNetwork(ctx, network, cfg, in.floatingNetworkID)
		if err != nil {
			return err
		}
		if fip, err = network.CreateFloatingIP(ctx, openstack.FloatingIPSpec{
			FloatingNetworkID: floatingNetworkID,
			PortID:            port.ID,
			FixedIP:           status.VIPAddress,
			Description:       in.mark.description(),
		}); err != nil {
			return err
		}
		log.Info("Created the floating IP", "floatingIP", fip.FloatingIP)
		in.record(eventFloatingIPCreated, "Created the floating IP %s for the VIP %s", fip.FloatingIP, status.VIPAddress)
	} else if fip.PortID != port.ID {
		if fip, err = network.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		log.Info("Re-associated the exposure's floating IP with the VIP port", "floatingIP", fip.FloatingIP)
		in.record(eventFloatingIPAssociate, "Re-associated the floating IP %s with the VIP port %s", fip.FloatingIP, port.ID)
	} else if err := checkFloatingPool(ctx, network, cfg, fip); err != nil {
		return err
	}
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = fip.ID, fip.FloatingIP, false
	return nil
}

// keepFloatingIP keeps the recorded floating IP on the VIP port: it re-associates it when
// it was disassociated (e.g. with a lost port) and allocates the same address again when
// it was deleted out of band; it never takes another address.
func (a *Actuator) keepFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	fip, err := network.GetFloatingIP(ctx, status.FloatingIPID)
	switch {
	case openstack.IsNotFound(err):
		return a.reallocateFloatingIP(ctx, log, network, in, port, status)
	case err != nil:
		return err
	}
	if in.config.FloatingIP == fip.FloatingIP {
		// Pinning the current address makes it the user's: it then outlives the exposure.
		status.FloatingIPAdopted = true
	}
	switch fip.PortID {
	case port.ID:
		if !status.FloatingIPAdopted {
			if err := checkFloatingPool(ctx, network, in.config, fip); err != nil {
				return err
			}
		}
	case "":
		if fip, err = network.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		log.Info("Re-associated the exposure's floating IP with the VIP port", "floatingIP", fip.FloatingIP)
		in.record(eventFloatingIPAssociate, "Re-associated the floating IP %s with the VIP port %s", fip.FloatingIP, port.ID)
	default:
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was associated with port %s outside of the extension: disassociate it so that it points at the VIP port %s again",
			fip.FloatingIP, fip.PortID, port.ID), gardencorev1beta1.ErrorInfraDependencies)
	}
	status.FloatingIPAddress = fip.FloatingIP
	return nil
}

// reallocateFloatingIP asks Neutron for the recorded address again after the floating IP
// was deleted out of band. If the address is gone (taken, or the policy forbids choosing
// it), the exposure says so rather than publishing a new address that DNS will not follow.
func (a *Actuator) reallocateFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	if status.FloatingIPAdopted {
		return configError("the floating IP %s named in floatingIP was deleted: allocate it again in the project", status.FloatingIPAddress)
	}
	floatingNetworkID, err := floatingNetwork(ctx, network, in.config, in.floatingNetworkID)
	if err != nil {
		return err
	}
	fip, err := network.CreateFloatingIP(ctx, openstack.FloatingIPSpec{
		FloatingNetworkID: floatingNetworkID,
		PortID:            port.ID,
		FixedIP:           status.VIPAddress,
		Description:       in.mark.description(),
		Address:           status.FloatingIPAddress,
	})
	if err != nil {
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was deleted outside of the extension, and allocating the same address again failed (%w): "+
			"allocate %s in the project with the description %q, or ask a cloud admin to",
			status.FloatingIPAddress, err, status.FloatingIPAddress, in.mark.description()), gardencorev1beta1.ErrorInfraDependencies)
	}
	log.Info("Allocated the deleted floating IP again", "floatingIP", fip.FloatingIP)
	in.record(eventFloatingIPRealloc, "The floating IP %s was deleted; allocated the same address again", fip.FloatingIP)
	status.FloatingIPID = fip.ID
	return nil
}

// adoptFloatingIP associates the pre-allocated floating IP named in the provider config.
func (a *Actuator) adoptFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, address string, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	fip, err := network.FindFloatingIPByAddress(ctx, address)
	if err != nil {
		return err
	}
	if fip.PortID != port.ID {
		if fip.PortID != "" {
			return v1beta1helper.NewErrorWithCodes(
				fmt.Errorf("floating IP %s is associated with port %s: disassociate it or choose another floatingIP", address, fip.PortID),
				gardencorev1beta1.ErrorInfraDependencies)
		}
		if fip, err = network.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		log.Info("Adopted the floating IP", "floatingIP", fip.FloatingIP)
	}
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = fip.ID, fip.FloatingIP, true
	return nil
}

// findOwnedFloatingIP returns a floating IP this extension created for the cluster: one on
// the VIP port, else one anywhere in the project with the owner mark (e.g. left
// unassociated by a lost port and a lost status), so that a second one is never
// allocated. Floating IPs on the VIP port without the mark are disassociated.
func (a *Actuator) findOwnedFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port, portCreated bool) (*floatingips.FloatingIP, error) {
	owned, err := network.ListFloatingIPs(ctx, floatingips.ListOpts{Description: in.mark.description()})
	if err != nil {
		return nil, err
	}
	var free *floatingips.FloatingIP
	for i := range owned {
		switch owned[i].PortID {
		case port.ID:
			return &owned[i], nil
		case "":
			if free == nil {
				free = &owned[i]
			}
		}
	}
	if !portCreated {
		foreign, err := network.FloatingIPsOfPort(ctx, port.ID)
		if err != nil {
			return nil, err
		}
		for _, fip := range foreign {
			log.Info("Disassociating a floating IP from the VIP port that the extension did not create and the provider config does not name", "floatingIP", fip.FloatingIP)
			if err := network.DisassociateFloatingIP(ctx, fip.ID); err != nil {
				return nil, err
			}
		}
	}
	return free, nil
}

// floatingNetwork returns the ID of the configured floating pool.
func floatingNetwork(ctx context.Context, network *openstack.Network, cfg *Config, resolved string) (string, error) {
	switch {
	case cfg.FloatingNetworkID != "":
		return cfg.FloatingNetworkID, nil
	case resolved != "":
		return resolved, nil
	}
	return network.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
}

// checkFloatingPool rejects a floating pool change while the extension's floating IP
// exists: a new pool means a new address for the kube-apiserver, which clients and
// kubeconfigs of the self-hosted shoot know; the pool is immutable like the VIP.
func checkFloatingPool(ctx context.Context, network *openstack.Network, cfg *Config, fip *floatingips.FloatingIP) error {
	want, err := floatingNetwork(ctx, network, cfg, "")
	if err != nil {
		return err
	}
	if fip.FloatingNetworkID != want {
		return configError("the floating IP %s of the exposure is from network %s, not from the configured floating pool %q (%s): "+
			"the floating pool cannot change while the floating IP exists; restore floatingPoolName/floatingNetworkID, or create a new exposure",
			fip.FloatingIP, fip.FloatingNetworkID, cfg.FloatingPoolName, want)
	}
	return nil
}

// ensureNodePairs puts the VIP pair on the ports of the control-plane nodes and removes it
// from other ports of the network (see syncPairs), and returns the node ports. Without any
// control-plane Node (yet) it does nothing: the node tracker handles the Nodes as they come.
func (a *Actuator) ensureNodePairs(ctx context.Context, log logr.Logger, network *openstack.Network, s pairSync) ([]v1alpha1.NodePort, error) {
	if len(s.nodes) == 0 {
		return nil, nil
	}
	return syncPairs(ctx, log, network, s)
}

// deployAgent applies the agent's objects; their state is read by checkFrontDoor.
func (a *Actuator) deployAgent(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, in *inputs, status *v1alpha1.ExposureStatus) error {
	image, err := a.agentImage(in.config.Agent)
	if err != nil {
		return err
	}
	spec := agentrollout.Spec{
		Namespace:      exp.Namespace,
		Implementation: v1alpha1.ImplementationOf(in.config.Agent),
		Image:          image,
		VIP:            status.VIPAddress,
		APIServerPort:  exp.Spec.Port,
		Agent:          in.config.Agent,
	}
	if err := a.opts.Agent.Deploy(ctx, spec); err != nil {
		return fmt.Errorf("rolling out the %s agent: %w", spec.Implementation, err)
	}
	return nil
}

// agentImage is the image of the agent implementation the config chooses.
func (a *Actuator) agentImage(agent *v1alpha1.AgentConfig) (string, error) {
	if v1alpha1.ImplementationOf(agent) != v1alpha1.AgentImplementationKubeVIP {
		return a.opts.AgentImage, nil
	}
	if agent.Image != nil {
		return *agent.Image, nil
	}
	if a.opts.KubeVIPImage == "" {
		return "", configError("agent.image is required for implementation kube-vip: the extension is deployed without a default kube-vip image")
	}
	return a.opts.KubeVIPImage, nil
}

// patchStatus writes status.providerStatus when it differs from what the object has.
func (a *Actuator) patchStatus(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) error {
	current, err := DecodeStatus(exp)
	if err == nil {
		current.TypeMeta = status.TypeMeta
		if equality.Semantic.DeepEqual(current, status) {
			return nil
		}
	}
	raw, err := encodeStatus(status)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(exp.DeepCopy())
	exp.Status.ProviderStatus = raw
	if err := a.client.Status().Patch(ctx, exp, patch); err != nil {
		return fmt.Errorf("writing status.providerStatus: %w", err)
	}
	return nil
}

// finish turns transient errors into a requeue with backoff and resets the backoff after
// a success.
func (a *Actuator) finish(exp *extensionsv1alpha1.SelfHostedShootExposure, err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		delete(a.failures, exp.UID)
		return nil
	}
	var requeue *reconcilerutils.RequeueAfterError
	if errors.As(err, &requeue) {
		return requeue
	}
	if !openstack.IsTransient(err) && !errors.Is(err, errNodePortMissing) && !errors.Is(err, errAgentPodsRemain) {
		return err
	}
	n := a.failures[exp.UID]
	a.failures[exp.UID] = n + 1
	delay := a.opts.MinBackoff << min(n, 16)
	if delay > a.opts.MaxBackoff || delay <= 0 {
		delay = a.opts.MaxBackoff
	}
	return &reconcilerutils.RequeueAfterError{Cause: err, RequeueAfter: delay}
}

func configPath(source ConfigSource) *field.Path {
	return field.NewPath(string(source))
}

func nodePortNames(nps []v1alpha1.NodePort) string {
	names := make([]string, 0, len(nps))
	for _, np := range nps {
		names = append(names, np.NodeName+"="+np.PortID)
	}
	return strings.Join(names, ", ")
}
