package exposure

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
// trusted before a reconciliation reads them back again. Changes of the inputs (provider
// config, credentials, Infrastructure, port, control-plane Nodes) always reconcile at once;
// the node tracker keeps the allowed address pairs in between.
const DefaultVerifyInterval = time.Hour

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
	// VerifyInterval, see DefaultVerifyInterval.
	VerifyInterval time.Duration
	// Clock is the clock for VerifyInterval and verifiedAt. Default: the real clock.
	Clock clock.PassiveClock
	// MinBackoff and MaxBackoff bound the requeue delay after transient failures.
	// Defaults: 2s and 2m.
	MinBackoff, MaxBackoff time.Duration
}

// Actuator reconciles SelfHostedShootExposures of type kube-vip.
type Actuator struct {
	client client.Client
	reader client.Reader
	opts   ActuatorOptions

	locks exposureLocks

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
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 2 * time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 2 * time.Minute
	}
	return &Actuator{
		client:   mgr.GetClient(),
		reader:   mgr.GetAPIReader(),
		opts:     opts,
		failures: map[types.UID]int{},
	}
}

// Reconcile makes sure the VIP port, its floating IP and the allowed address pairs exist,
// rolls out the agent and returns the ingress (the floating IP, or the VIP when internal).
func (a *Actuator) Reconcile(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) ([]corev1.LoadBalancerIngress, error) {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	ingress, err := a.reconcile(ctx, log, exp, cluster)
	return ingress, a.finish(exp, err)
}

func (a *Actuator) reconcile(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) ([]corev1.LoadBalancerIngress, error) {
	status, err := DecodeStatus(exp)
	if err != nil {
		return nil, err
	}
	in, err := a.gatherInputs(ctx, exp, cluster)
	if err != nil {
		return ingressFromStatus(status), err
	}
	hash := in.hash(a.opts.AgentImage)
	now := a.opts.Clock.Now()

	if status.InputsHash == hash && statusComplete(status, in.config) && status.VerifiedAt != nil && now.Sub(status.VerifiedAt.Time) < a.opts.VerifyInterval {
		log.V(1).Info("Inputs unchanged and recently verified, no OpenStack call")
		if err := a.deployAgent(ctx, exp, in, status); err != nil {
			return ingressFromStatus(status), err
		}
		return ingressFromStatus(status), a.patchStatus(ctx, exp, status)
	}

	network, err := a.opts.ClientFactory.Network(ctx, in.auth)
	if err != nil {
		return ingressFromStatus(status), err
	}
	desired, err := a.ensureOpenStack(ctx, log, network, in, status)
	if desired != nil {
		status = desired
	}
	if err != nil {
		// keep what was found or created so far
		status.InputsHash = ""
		if patchErr := a.patchStatus(ctx, exp, status); patchErr != nil {
			log.Error(patchErr, "Could not record the partial status")
		}
		return ingressFromStatus(status), err
	}
	status.InputsHash = hash
	status.VerifiedAt = &metav1.Time{Time: now}

	if err := a.deployAgent(ctx, exp, in, status); err != nil {
		_ = a.patchStatus(ctx, exp, status)
		return ingressFromStatus(status), err
	}
	return ingressFromStatus(status), a.patchStatus(ctx, exp, status)
}

// gatherInputs resolves config, credentials, Infrastructure and control-plane Nodes.
func (a *Actuator) gatherInputs(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*inputs, error) {
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
	return &inputs{
		identity:   clusterIdentity(exp, cluster),
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
	if s.PortID == "" || s.VIPAddress == "" {
		return false
	}
	return cfg.InternalOnly || s.FloatingIPAddress != ""
}

func ingressFromStatus(s *v1alpha1.ExposureStatus) []corev1.LoadBalancerIngress {
	switch {
	case s == nil:
		return nil
	case s.FloatingIPAddress != "":
		return []corev1.LoadBalancerIngress{{IP: s.FloatingIPAddress}}
	case s.VIPAddress != "" && s.FloatingIPID == "" && s.PortID != "":
		return []corev1.LoadBalancerIngress{{IP: s.VIPAddress}}
	}
	return nil
}

func vipPortSpec(in *inputs) openstack.VIPPortSpec {
	return openstack.VIPPortSpec{
		Name:        vipPortName(in.identity),
		Description: ownerDescription(in.identity),
		NetworkID:   in.config.NetworkID,
		SubnetID:    in.config.SubnetID,
		IPAddress:   in.config.VIPAddress,
		Tags:        clusterTags(in.identity),
	}
}

// vipPortName is the name of the cluster's VIP port.
func vipPortName(identity string) string {
	return "kube-vip-" + identity
}

// ownerDescription is the description of the VIP port and of the floating IPs this
// extension creates. On floating IPs it is the mark of ownership: only a floating IP with
// exactly this description is ever deleted; others (pre-allocated by the user) are only
// disassociated. Neutron stores the description with the create request, at no extra call.
func ownerDescription(identity string) string {
	return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s (gardener-extension-kube-vip); do not delete", identity)
}

// ownedFloatingIP tells whether this extension created the floating IP for the cluster.
func ownedFloatingIP(fip *floatingips.FloatingIP, identity string) bool {
	return fip.Description == ownerDescription(identity)
}

func clusterTags(identity string) []string {
	return []string{openstack.TagExtension, openstack.ClusterTag(identity)}
}

// ensureOpenStack brings the VIP port, floating IP and node pairs to the desired state and
// returns the new status. It returns the status reached so far together with an error.
func (a *Actuator) ensureOpenStack(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, old *v1alpha1.ExposureStatus) (*v1alpha1.ExposureStatus, error) {
	cfg := in.config
	fldPath := configPath(in.source)

	subnet := SubnetFacts{NetworkID: cfg.SubnetNetworkID, CIDR: cfg.SubnetCIDR}
	if cfg.SubnetID != "" && cfg.SubnetCIDR == "" {
		s, err := network.GetSubnet(ctx, cfg.SubnetID)
		if err != nil {
			if openstack.IsNotFound(err) {
				return nil, configError("subnet %s does not exist: fix subnetID in the provider config or the Infrastructure", cfg.SubnetID)
			}
			return nil, err
		}
		subnet = SubnetFacts{NetworkID: s.NetworkID, CIDR: s.CIDR}
	}
	if errs := ValidateResolved(cfg, subnet, fldPath); len(errs) > 0 {
		return nil, configError("fix the provider config: %w", errs.ToAggregate())
	}

	status := old.DeepCopy()
	status.NetworkID, status.SubnetID = cfg.NetworkID, cfg.SubnetID

	port, created, err := network.GetOrCreateVIPPort(ctx, vipPortSpec(in))
	if err != nil {
		return status, err
	}
	if created {
		log.Info("Created the VIP port", "port", port.ID)
	}
	// Recorded before the tagging, so that a failed tagging does not lose the port.
	status.PortID = port.ID
	status.VIPAddress = openstack.PortAddress(port, cfg.SubnetID)
	if !openstack.HasAllTags(port.Tags, clusterTags(in.identity)) {
		// Neutron without the tag_ports_during_bulk_creation extension driver ignores tags in
		// the create request; a port found untagged is re-tagged.
		if err := network.ReplacePortTags(ctx, port.ID, clusterTags(in.identity)); err != nil {
			return status, err
		}
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
	})
	wg.Wait()
	status.NodePorts = nodePorts
	return status, errors.Join(fipErr, pairsErr)
}

// ensureFloatingIP allocates, adopts or releases the floating IP of the VIP port and
// records it in status.
func (a *Actuator) ensureFloatingIP(ctx context.Context, log logr.Logger, network *openstack.Network, in *inputs, port *ports.Port, portCreated bool, status *v1alpha1.ExposureStatus) error {
	cfg := in.config
	// release deletes a floating IP only when the extension created it (a status written by
	// an older version may record a floating IP it found on the port as its own).
	release := func(id string, adopted bool) error {
		if !adopted {
			fip, err := network.GetFloatingIP(ctx, id)
			if openstack.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if ownedFloatingIP(fip, in.identity) {
				return network.DeleteFloatingIP(ctx, id)
			}
		}
		return network.DisassociateFloatingIP(ctx, id)
	}

	if cfg.InternalOnly {
		if status.FloatingIPID != "" {
			log.Info("Releasing the floating IP, the exposure is internal only now", "floatingIP", status.FloatingIPAddress)
			if err := release(status.FloatingIPID, status.FloatingIPAdopted); err != nil {
				return err
			}
		}
		status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = "", "", false
		return nil
	}

	// A previously used floating IP that no longer fits the config goes first.
	if status.FloatingIPID != "" && (status.FloatingIPAdopted != (cfg.FloatingIP != "") || (cfg.FloatingIP != "" && cfg.FloatingIP != status.FloatingIPAddress)) {
		log.Info("Releasing the floating IP that no longer matches the provider config", "floatingIP", status.FloatingIPAddress)
		if err := release(status.FloatingIPID, status.FloatingIPAdopted); err != nil {
			return err
		}
		status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = "", "", false
	}

	floatingNetworkID := cfg.FloatingNetworkID
	if cfg.FloatingIP != "" {
		fip, err := network.FindFloatingIPByAddress(ctx, cfg.FloatingIP)
		if err != nil {
			return err
		}
		if fip.PortID != port.ID {
			if fip.PortID != "" {
				return v1beta1helper.NewErrorWithCodes(
					fmt.Errorf("floating IP %s is associated with port %s: disassociate it or choose another floatingIP", cfg.FloatingIP, fip.PortID),
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

	if !portCreated {
		existing, err := network.FloatingIPsOfPort(ctx, port.ID)
		if err != nil {
			return err
		}
		if fip := pickFloatingIP(existing, in.identity, status.FloatingIPID); fip != nil {
			if err := checkFloatingPool(ctx, network, cfg, fip); err != nil {
				return err
			}
			status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = fip.ID, fip.FloatingIP, false
			return nil
		}
		// A floating IP on the VIP port that this extension did not create and the config
		// does not name is not ours to keep or to delete: it is only disassociated.
		for _, fip := range existing {
			log.Info("Disassociating a floating IP from the VIP port that the extension did not create and the provider config does not name", "floatingIP", fip.FloatingIP)
			if err := network.DisassociateFloatingIP(ctx, fip.ID); err != nil {
				return err
			}
		}
	}
	if floatingNetworkID == "" {
		id, err := network.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
		if err != nil {
			return err
		}
		floatingNetworkID = id
	}
	fip, err := network.CreateFloatingIP(ctx, openstack.FloatingIPSpec{
		FloatingNetworkID: floatingNetworkID,
		PortID:            port.ID,
		FixedIP:           status.VIPAddress,
		Description:       ownerDescription(in.identity),
	})
	if err != nil {
		return err
	}
	log.Info("Created the floating IP", "floatingIP", fip.FloatingIP)
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = fip.ID, fip.FloatingIP, false
	return nil
}

// pickFloatingIP returns the floating IP this extension created for the cluster, preferring
// preferID, or nil.
func pickFloatingIP(list []floatingips.FloatingIP, identity, preferID string) *floatingips.FloatingIP {
	var found *floatingips.FloatingIP
	for i := range list {
		if !ownedFloatingIP(&list[i], identity) {
			continue
		}
		if list[i].ID == preferID {
			return &list[i]
		}
		if found == nil {
			found = &list[i]
		}
	}
	return found
}

// checkFloatingPool rejects a floating pool change while the extension's floating IP
// exists: a new pool means a new address for the kube-apiserver, which clients and
// kubeconfigs of the self-hosted shoot know; the pool is immutable like the VIP.
func checkFloatingPool(ctx context.Context, network *openstack.Network, cfg *Config, fip *floatingips.FloatingIP) error {
	want := cfg.FloatingNetworkID
	if want == "" {
		id, err := network.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
		if err != nil {
			return err
		}
		want = id
	}
	if fip.FloatingNetworkID != want {
		return configError("the floating IP %s of the exposure is from network %s, not from the configured floating pool %q (%s): "+
			"the floating pool cannot change while the floating IP exists; restore floatingPoolName/floatingNetworkID, or delete and recreate the exposure",
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

func (a *Actuator) deployAgent(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, in *inputs, status *v1alpha1.ExposureStatus) error {
	spec := agentrollout.Spec{
		Namespace:     exp.Namespace,
		Image:         a.opts.AgentImage,
		VIP:           status.VIPAddress,
		APIServerPort: exp.Spec.Port,
		Agent:         in.config.Agent,
	}
	if err := a.opts.Agent.Deploy(ctx, spec); err != nil {
		return fmt.Errorf("rolling out the kube-vip-agent: %w", err)
	}
	agentStatus, err := a.opts.Agent.Status(ctx, exp.Namespace)
	if err != nil {
		return fmt.Errorf("reading the kube-vip-agent status: %w", err)
	}
	status.Agent = agentStatus
	return nil
}

// patchStatus writes status.providerStatus when it differs from what the object has.
func (a *Actuator) patchStatus(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) error {
	current, err := DecodeStatus(exp)
	if err == nil {
		current.TypeMeta = status.TypeMeta
		if reflect.DeepEqual(current, status) {
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
