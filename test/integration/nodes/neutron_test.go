// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// neutronEnv is the shared control plane bootstrapped with the Gardener objects of the
// local OpenStack, and a Neutron client of the tests' own.
type neutronEnv struct {
	cp      *framework.ControlPlane
	os      framework.OpenStackEnv
	neutron *openstack.Network
}

var neutronSetup struct {
	once sync.Once
	env  *neutronEnv
	err  error
}

func setupNeutron(t *testing.T) *neutronEnv {
	t.Helper()
	osEnv := framework.OpenStack(t)
	cp := startControlPlane(t)
	neutronSetup.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := framework.Bootstrap(ctx, cp.Client, osEnv.BootstrapOptions(framework.ApplicationCredential)); err != nil {
			neutronSetup.err = fmt.Errorf("bootstrapping Gardener objects: %w", err)
			return
		}
		n, err := osEnv.Network(ctx)
		if err != nil {
			neutronSetup.err = err
			return
		}
		neutronSetup.env = &neutronEnv{cp: cp, os: osEnv, neutron: n}
	})
	if neutronSetup.err != nil {
		t.Fatal(neutronSetup.err)
	}
	return neutronSetup.env
}

// uniqueShoot gives the shoot in the Cluster a fresh technical ID, so that the Neutron
// resources of this test are tagged apart from those of tests running at the same time.
func uniqueShoot(ctx context.Context, t *testing.T, e *neutronEnv) string {
	t.Helper()
	id := framework.UniqueTechnicalID("kvnodes-")
	if err := framework.SetTechnicalID(ctx, e.cp.Client, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// createPort creates a compute port in the node subnet (at ip, or where Neutron likes).
func createPort(ctx context.Context, t *testing.T, e *neutronEnv, name, ip string) *ports.Port {
	t.Helper()
	fixed := ports.IP{SubnetID: e.os.SubnetID, IPAddress: ip}
	p, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{
		NetworkID: e.os.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
		FixedIPs: []ports.IP{fixed},
	}).Extract()
	if err != nil {
		t.Fatalf("creating port %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), p.ID) })
	return p
}

func createCPNode(ctx context.Context, t *testing.T, e *neutronEnv, name, ip string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{controlPlaneLabel: ""}}}
	if err := e.cp.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if err := e.cp.Client.Status().Update(ctx, node); err != nil {
		t.Fatalf("setting Node %s address: %v", name, err)
	}
	return node
}

func hasVIPPair(ctx context.Context, t *testing.T, e *neutronEnv, portID, vip string) bool {
	t.Helper()
	p, err := e.neutron.GetPort(ctx, portID)
	if err != nil {
		t.Fatalf("reading port %s: %v", portID, err)
	}
	return slices.ContainsFunc(p.AllowedAddressPairs, func(a ports.AddressPair) bool { return a.IPAddress == vip })
}

// eventually polls cond every 100ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// TestNodeTrackingWithNeutron runs the exposure controller and the node tracker together
// against the real kube-apiserver and the local Neutron: a new control-plane Node gets the
// VIP pair on its port without a reconciliation of the exposure, a Node whose port comes
// later gets it once the port exists, a deleted Node loses it, and deleting the exposure
// waits for the agent pods before it releases the VIP port.
func TestNodeTrackingWithNeutron(t *testing.T) {
	e := setupNeutron(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := uniqueShoot(ctx, t, e)

	portA := createPort(ctx, t, e, id+"-a", "")
	createCPNode(ctx, t, e, id+"-a", portA.FixedIPs[0].IPAddress)

	mgr, err := manager.New(e.cp.Config, manager.Options{
		Scheme:                 e.cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	actuator := exposure.NewActuator(mgr, exposure.ActuatorOptions{
		ClientFactory: openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)}),
		AgentImage:    "example.org/kube-vip-agent:test",
		// Pairs only: no agent runs, so the front door is not checked.
		FrontDoorProbe: exposure.FrontDoorOff,
		MinBackoff:     200 * time.Millisecond,
		MaxBackoff:     2 * time.Second,
	})
	if err := exposure.AddToManager(ctx, mgr, exposure.AddOptions{Actuator: actuator, Controller: controller.Options{MaxConcurrentReconciles: 1}}); err != nil {
		t.Fatalf("adding exposure controller: %v", err)
	}
	if err := nodes.AddToManager(ctx, mgr, nodes.AddOptions{Syncer: actuator}); err != nil {
		t.Fatalf("adding node tracker: %v", err)
	}
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: framework.Namespace},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: exposure.DefaultType},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: framework.Namespace, Name: framework.CloudProviderSecretName},
			Port:           6443,
			Endpoints: []extensionsv1alpha1.ControlPlaneEndpoint{{
				NodeName: id + "-a", Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: portA.FixedIPs[0].IPAddress}},
			}},
		},
	}
	if err := e.cp.Client.Create(ctx, exp); err != nil {
		t.Fatalf("creating exposure: %v", err)
	}
	t.Cleanup(func() { cleanupExposure(t, e, exp, id) })

	var status *exposureStatus
	eventually(t, time.Minute, "exposure reconciled with ingress", func() bool {
		status = readStatus(ctx, t, e, exp)
		return status.succeeded && status.vip != ""
	})
	vip := status.vip
	t.Logf("VIP %s on port %s", vip, status.portID)
	if !hasVIPPair(ctx, t, e, portA.ID, vip) {
		t.Fatalf("port of the first node lacks the pair %s", vip)
	}
	reconciledAt := status.lastUpdate

	t.Run("new control-plane node gets the pair", func(t *testing.T) {
		portB := createPort(ctx, t, e, id+"-b", "")
		createCPNode(ctx, t, e, id+"-b", portB.FixedIPs[0].IPAddress)
		took := eventually(t, 15*time.Second, "VIP pair on the new node's port", func() bool { return hasVIPPair(ctx, t, e, portB.ID, vip) })
		t.Logf("pair on the new node's port after %s", took.Round(time.Millisecond))
		if s := readStatus(ctx, t, e, exp); !s.lastUpdate.Equal(reconciledAt) {
			t.Errorf("the exposure was reconciled (lastOperation %s -> %s); the node tracker alone should have added the pair", reconciledAt, s.lastUpdate)
		}

		// Node deleted: its port loses the pair, the others keep it.
		if err := e.cp.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id + "-b"}}); err != nil {
			t.Fatal(err)
		}
		took = eventually(t, 15*time.Second, "VIP pair removed from the deleted node's port", func() bool { return !hasVIPPair(ctx, t, e, portB.ID, vip) })
		t.Logf("pair removed after %s", took.Round(time.Millisecond))
		if !hasVIPPair(ctx, t, e, portA.ID, vip) {
			t.Error("the remaining node's port lost the pair")
		}
	})

	t.Run("node before its port is retried", func(t *testing.T) {
		// Learn a free address, release it, and give it to a Node that has no port yet.
		probe := createPort(ctx, t, e, id+"-c-probe", "")
		ip := probe.FixedIPs[0].IPAddress
		if err := e.neutron.DeletePort(ctx, probe.ID); err != nil {
			t.Fatal(err)
		}
		createCPNode(ctx, t, e, id+"-c", ip)
		time.Sleep(time.Second) // a few failed syncs
		portC := createPort(ctx, t, e, id+"-c", ip)
		took := eventually(t, 20*time.Second, "VIP pair on the late port", func() bool { return hasVIPPair(ctx, t, e, portC.ID, vip) })
		t.Logf("pair on the late port %s after it was created", took.Round(time.Millisecond))
	})

	t.Run("deletion removes the agent before the VIP port", func(t *testing.T) {
		ds := &appsv1.DaemonSet{}
		if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.Name}, ds); err != nil {
			t.Fatalf("the agent DaemonSet was not deployed: %v", err)
		}
		// envtest runs no DaemonSet controller and no garbage collector: an agent pod of
		// our own stands for a node that may still hold the VIP.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "kube-vip-agent-test", Namespace: framework.Namespace, Labels: ds.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}},
			},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		if err := e.cp.Client.Create(ctx, pod); err != nil {
			t.Fatalf("creating agent pod: %v", err)
		}
		t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), pod) })

		if err := e.cp.Client.Delete(ctx, exp); err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "DaemonSet deleted", func() bool {
			err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(ds), &appsv1.DaemonSet{})
			return apierrors.IsNotFound(err)
		})
		// While the pod exists, the VIP port and the pairs stay.
		time.Sleep(2 * time.Second)
		if _, err := e.neutron.GetPort(ctx, status.portID); err != nil {
			t.Fatalf("VIP port gone while an agent pod exists: %v", err)
		}
		if !hasVIPPair(ctx, t, e, portA.ID, vip) {
			t.Fatal("VIP pair removed while an agent pod exists")
		}

		if err := e.cp.Client.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, 30*time.Second, "exposure gone", func() bool {
			err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), &extensionsv1alpha1.SelfHostedShootExposure{})
			return apierrors.IsNotFound(err)
		})
		t.Logf("exposure gone %s after the last agent pod", took.Round(time.Millisecond))
		if _, err := e.neutron.GetPort(ctx, status.portID); !openstack.IsNotFound(err) {
			t.Errorf("VIP port still there after deletion: %v", err)
		}
		if hasVIPPair(ctx, t, e, portA.ID, vip) {
			t.Error("VIP pair left on a node port after deletion")
		}
	})
}

type exposureStatus struct {
	succeeded  bool
	lastUpdate time.Time
	vip        string
	portID     string
}

func readStatus(ctx context.Context, t *testing.T, e *neutronEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) *exposureStatus {
	t.Helper()
	cur := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), cur); err != nil {
		t.Fatalf("reading exposure: %v", err)
	}
	s := &exposureStatus{}
	if lo := cur.Status.LastOperation; lo != nil {
		s.succeeded = lo.State == "Succeeded" && len(cur.Status.Ingress) > 0
		s.lastUpdate = lo.LastUpdateTime.Time
	}
	if cur.Status.ProviderStatus != nil {
		if st, err := exposure.DecodeStatus(cur); err == nil {
			s.vip, s.portID = st.VIPAddress, st.PortID
		}
	}
	return s
}

// cleanupExposure deletes the exposure if the test left it, lets the controller finish,
// and removes any Neutron port still tagged for the shoot.
func cleanupExposure(t *testing.T, e *neutronEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.cp.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(exp.Namespace), client.MatchingLabels{agentrollout.LabelAppName: agentrollout.Name})
	_ = e.cp.Client.Delete(ctx, exp)
	for {
		err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), &extensionsv1alpha1.SelfHostedShootExposure{})
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	left, _ := e.neutron.ListPorts(context.Background(), openstack.PortFilter{Tags: []string{openstack.ClusterTag(id)}})
	for _, p := range left {
		t.Errorf("port %s still tagged for %s; removing it", p.ID, id)
		fips, _ := e.neutron.FloatingIPsOfPort(context.Background(), p.ID)
		for _, f := range fips {
			_ = e.neutron.DeleteFloatingIP(context.Background(), f.ID)
		}
		_ = e.neutron.DeletePort(context.Background(), p.ID)
	}
}
