// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
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
// VIP port (port.go), its floating IP (floatingip.go), the node ports' pairs (pairs.go),
// the agent, and the status. The two rules (whose a resource is, what never changes) live
// in policy.go; the front door in frontdoor.go; deletion in delete.go; the Neutron calls
// behind the interface of neutron.go. It returns the status reached and whether the
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
	if err := checkImmutable(in.config, status); err != nil {
		return status, internalOnly, err
	}
	in.event = func(eventType, reason, format string, args ...any) { a.event(exp, eventType, reason, format, args...) }
	if status.Identity == "" {
		in.recordFirst = func(s *v1alpha1.ExposureStatus) error { return a.patchStatus(ctx, exp, s) }
	}

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
	m := markOf(status, clusterIdentity(exp, cluster), exp.UID, clusterShoot(cluster))
	return &inputs{
		uid:        exp.UID,
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

// ensureOpenStack brings the VIP port, floating IP and node pairs to the desired state and
// returns the new status. It returns the status reached so far together with an error.
func (a *Actuator) ensureOpenStack(ctx context.Context, log logr.Logger, network neutron, in *inputs, old *v1alpha1.ExposureStatus) (*v1alpha1.ExposureStatus, error) {
	cfg := in.config
	if err := a.validateAgainstNeutron(ctx, network, in); err != nil {
		return nil, err
	}
	status := old.DeepCopy()
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

// ensureNodePairs puts the VIP pair on the ports of the control-plane nodes and removes it
// from other ports of the network (see syncPairs), and returns the node ports. Without any
// control-plane Node (yet) it does nothing: the node tracker handles the Nodes as they come.
func (a *Actuator) ensureNodePairs(ctx context.Context, log logr.Logger, network neutron, s pairSync) ([]v1alpha1.NodePort, error) {
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
