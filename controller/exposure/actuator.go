// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Actuator reconciles SelfHostedShootExposures of type kube-vip.
type Actuator struct {
	client client.Client
	reader client.Reader
	opts   ActuatorOptions
	events events.EventRecorder

	locks keyedLocks[types.UID]
	// claims serialises, per cluster identity, the claims of the front door by exposures
	// that have recorded no VIP port yet.
	claims        keyedLocks[string]
	verifications verificationRequests

	mu       sync.Mutex
	failures map[types.UID]int
}

var _ selfhostedshootexposure.Actuator = (*Actuator)(nil)

// NewActuator returns the actuator.
func NewActuator(mgr manager.Manager, opts ActuatorOptions) *Actuator {
	opts = opts.withDefaults(mgr)
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
	if families := shootFamilies(clusterShoot(cluster)); hasIPv6(families) {
		return familyIngress(families, status, internalOnly), a.finish(exp, err)
	}
	return ingress(ingressOf(status, internalOnly)), a.finish(exp, err)
}

// reconcileLocked runs reconcile under the exposure's lock and writes the status it
// reached, also a partial one with its error: what was found or created so far is kept.
func (a *Actuator) reconcileLocked(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*v1alpha1.ExposureStatus, bool, error) {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	status, internalOnly, err := a.reconcile(ctx, log, exp, cluster)
	if status == nil {
		return nil, internalOnly, err
	}
	if patchErr := a.patchStatus(ctx, exp, status); patchErr != nil {
		if err == nil {
			return status, internalOnly, patchErr
		}
		log.Error(patchErr, "Could not record the partial status")
	}
	return status, internalOnly, err
}

// reconcile is the whole flow up to the front door, top-down: gather the inputs, then the
// VIP port, its floating IP and the node ports' pairs (package networking, which also holds
// the two rules: whose a resource is, what never changes), the pair labels (labels.go),
// the agent; reconcileLocked writes the status it returns. The front door is in
// frontdoor.go, deletion in delete.go. It returns the status reached and whether the
// exposure is internal only.
func (a *Actuator) reconcile(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) (*v1alpha1.ExposureStatus, bool, error) {
	status, err := DecodeStatus(exp)
	if err != nil {
		return nil, false, err
	}
	// Gather and validate the inputs before the first side effect (inputs.go).
	in, err := a.gatherInputs(ctx, exp, cluster, status)
	if err != nil {
		return status, false, err
	}
	internalOnly := in.config.InternalOnly
	if dropped := networking.KeepRecordedFamilies(&in.config.Spec, status); len(dropped) > 0 {
		log.Info("The shoot gained an IP family after the front door was made; the door stays as it is", "subnets", dropped)
		in.event(corev1.EventTypeWarning, eventFamilyNotAdded, "The shoot's IP families now include the subnets %v, but the front door (VIP %s) was made without them and Gardener publishes it only once: it stays as it is, and the cluster is reached on its published address; a front door in the added family takes a cluster created with it", dropped, status.VIPAddress)
	}
	if err := networking.CheckImmutable(&in.config.Spec, status); err != nil {
		return status, internalOnly, err
	}
	status.FrontDoorPath = a.frontDoorPath(in.config)

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
		return status, internalOnly, a.deployAgent(ctx, exp, in, status)
	}

	network, err := a.opts.ClientFactory.Network(ctx, in.auth)
	if err != nil {
		return status, internalOnly, err
	}
	desired, err := a.ensureOpenStack(ctx, log, network, in, status)
	if desired != nil {
		status = desired
	}
	a.setVerified(exp, status, in.auth, err)
	if err != nil {
		status.InputsHash = ""
		return status, internalOnly, err
	}
	status.InputsHash = hash
	status.VerifiedAt = &metav1.Time{Time: now}

	return status, internalOnly, a.deployAgent(ctx, exp, in, status)
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
func (a *Actuator) ensureOpenStack(ctx context.Context, log logr.Logger, network networking.Neutron, in *inputs, old *v1alpha1.ExposureStatus) (*v1alpha1.ExposureStatus, error) {
	cfg := in.config
	floatingNetworkID, err := a.validateAgainstNeutron(ctx, network, in)
	if err != nil {
		return nil, err
	}
	status := old.DeepCopy()
	status.NetworkID, status.SubnetID = cfg.NetworkID, cfg.SubnetID

	owning := func(ctx context.Context, uid string) (string, error) { return a.exposureOwning(ctx, in.namespace, uid) }
	svc := networking.NewService(network, networking.Options{Log: log, ExposureOwning: owning, Record: in.record})
	door := in.frontDoor(floatingNetworkID)
	port, created, err := a.vipPort(ctx, svc, door, status)
	if err != nil {
		if status.VIPHeldBy != "" {
			return status, errors.Join(err, a.withdrawPairs(ctx, log, svc, status))
		}
		return status, err
	}

	// The floating IP and the node pairs are independent of each other: do them at once.
	// The pairs work on a copy, as the floating IP step writes its fields of status.
	var (
		wg        sync.WaitGroup
		fipErr    error
		nodePorts []v1alpha1.NodePort
		pairsErr  error
		recorded  = status.DeepCopy()
	)
	recorded.PortID = port.ID
	wg.Go(func() { fipErr = svc.ReconcileFloatingIP(ctx, door, port, created, status) })
	// Without any control-plane Node (yet) the pairs wait: the node tracker handles the
	// Nodes as they come. The agent DaemonSet, applied after this, runs only on labelled
	// nodes, so it never starts where port security drops the VIP.
	if len(in.nodes) > 0 {
		wg.Go(func() { nodePorts, _, pairsErr = a.pairNodes(ctx, log, network, in.namespace, recorded, in.nodes) })
	}
	wg.Wait()
	if len(in.nodes) > 0 {
		if pairsErr == nil && !slices.Equal(status.NodePorts, nodePorts) {
			in.record(eventNodePortsChanged, "The VIP %s is now an allowed address pair of the node ports %s", recorded.VIPAddress, nodePortNames(nodePorts))
		}
		status.NodePorts = recordNodePorts(status.NodePorts, nodePorts, pairsErr)
	}
	return status, errors.Join(fipErr, pairsErr)
}

// withdrawPairs takes the VIP pair from the recorded node ports and the pair label from
// every node, when another port holds the recorded VIP: the agents stop and the nodes no
// longer answer for an address that is not the cluster's now. Without the label no agent
// holds the VIP, so nothing waits for a departing agent here.
func (a *Actuator) withdrawPairs(ctx context.Context, log logr.Logger, svc *networking.Service, status *v1alpha1.ExposureStatus) error {
	log.Info("Another port holds the VIP: taking the VIP pair from the node ports and the pair label from the nodes", "vip", status.VIPAddress, "holder", status.VIPHeldBy)
	left, err := svc.ReconcilePairs(ctx, networking.Pairs{NetworkID: status.NetworkID, VIP: status.VIPAddress, OtherVIPs: otherVIPAddresses(status), Managed: portIDs(status.NodePorts)})
	status.NodePorts = recordNodePorts(status.NodePorts, left, err)
	return errors.Join(err, a.syncPairLabels(ctx, log, status.VIPAddress, nil, nil, nil))
}

// vipPort gets or creates the VIP port. An exposure that has recorded none claims the
// cluster's front door; the claims of one cluster run one at a time, so that of two
// exposures created at once the second finds the first's port and is refused, instead of
// both finding none and creating a door each.
func (a *Actuator) vipPort(ctx context.Context, svc *networking.Service, door *networking.FrontDoor, status *v1alpha1.ExposureStatus) (*ports.Port, bool, error) {
	if status.PortID == "" {
		unlock := a.claims.lock(door.Mark.Identity)
		defer unlock()
	}
	return svc.GetOrCreateVIPPort(ctx, door, status)
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
	err = openstack.WithEveryCode(err)
	if !openstack.IsTransient(err) && !errors.Is(err, networking.ErrNodePortMissing) && !errors.Is(err, errAgentPodsRemain) {
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

func nodePortNames(nps []v1alpha1.NodePort) string {
	names := make([]string, 0, len(nps))
	for _, np := range nps {
		names = append(names, np.NodeName+"="+np.PortID)
	}
	return strings.Join(names, ", ")
}
