// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/faults"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// createExposure creates an exposure (with mutate applied) and registers its deletion with
// a check that nothing is left; it waits for success when wait is set.
func createExposure(t *testing.T, ctx context.Context, e *sharedEnv, mutate func(*extensionsv1alpha1.SelfHostedShootExposure), wait bool) (*extensionsv1alpha1.SelfHostedShootExposure, string) {
	t.Helper()
	exp, identity := newExposure(t, ctx, e, "finding")
	if mutate != nil {
		mutate(exp)
	}
	if err := e.cp.Client.Create(ctx, exp); err != nil {
		t.Fatalf("creating exposure: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), converge)
		defer cancel()
		_ = e.cp.Client.Delete(ctx, exp)
		(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "the exposure to be deleted", gone)
		assertNothingLeft(t, ctx, e, identity, "")
	})
	if wait {
		(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "the exposure to succeed", succeeded)
	}
	return exp, identity
}

func providerStatus(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) *v1alpha1.ExposureStatus {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	status := &v1alpha1.ExposureStatus{}
	if current.Status.ProviderStatus != nil {
		if err := json.Unmarshal(current.Status.ProviderStatus.Raw, status); err != nil {
			t.Fatal(err)
		}
	}
	return status
}

func pairHolders(t *testing.T, ctx context.Context, e *sharedEnv, vip string) []string {
	t.Helper()
	var holders []string
	for _, n := range e.nodes {
		p, err := e.neutron.GetPort(ctx, n.port)
		if err != nil {
			t.Fatal(err)
		}
		if openstack.HasPair(p, vip) {
			holders = append(holders, n.name)
		}
	}
	return holders
}

// begin starts the controller for a test with a deadline; cp says whether the shared
// Nodes are control-plane Nodes (they are again after the test).
func begin(t *testing.T, cp bool) (*sharedEnv, context.Context) {
	t.Helper()
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	t.Cleanup(cancel)
	startController(t, e)
	e.setControlPlane(t, ctx, cp)
	t.Cleanup(func() { e.setControlPlane(t, context.Background(), true) })
	return e, ctx
}

// extraNode creates a Neutron port with opts and a control-plane Node with its address.
func extraNode(t *testing.T, ctx context.Context, e *sharedEnv, name string, opts ports.CreateOptsBuilder) *ports.Port {
	t.Helper()
	p, err := ports.Create(ctx, e.neutron.ServiceClient(), opts).Extract()
	if err != nil {
		t.Fatalf("creating the port of node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), p.ID) })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{exposure.LabelControlPlane: ""}}}
	if err := e.cp.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: p.FixedIPs[0].IPAddress}}
	if err := e.cp.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Let the controller's cache see the Node before the exposure exists.
	time.Sleep(300 * time.Millisecond)
	return p
}

// TestM2PortSecurityOffIsSkipped: a control-plane node whose port has port security
// disabled needs no pair; the exposure succeeds, notes the port in status and does not
// retry the refused update.
func TestM2PortSecurityOffIsSkipped(t *testing.T) {
	e, ctx := begin(t, false)
	off := false
	name := fmt.Sprintf("faults-nosec-%d", os.Getpid())
	p := extraNode(t, ctx, e, name, portsecurity.PortCreateOptsExt{
		CreateOptsBuilder: ports.CreateOpts{NetworkID: e.os.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
			FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}, SecurityGroups: &[]string{}},
		PortSecurityEnabled: &off,
	})

	e.proxy.Arm(nil)
	exp, _ := createExposure(t, ctx, e, nil, true)
	status := providerStatus(t, ctx, e, exp)
	want := []v1alpha1.NodePort{{NodeName: name, PortID: p.ID, PortSecurityDisabled: true}}
	if !slices.Equal(status.NodePorts, want) {
		t.Errorf("status.nodePorts %+v, want %+v", status.NodePorts, want)
	}
	refused := func() int {
		n := 0
		for _, c := range e.proxy.Mutating() {
			if c.Method == "PUT" && c.Status == 409 {
				n++
			}
		}
		return n
	}
	before := refused()
	time.Sleep(3 * time.Second)
	if after := refused(); after != before {
		t.Errorf("%d refused pair updates in the 3 s after success: the controller loops on the 409", after-before)
	}
	np, err := e.neutron.GetPort(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(np.AllowedAddressPairs) != 0 {
		t.Errorf("the port without port security has pairs %v", np.AllowedAddressPairs)
	}
}

// TestM5ZeroControlPlaneNodesKeepPairs: when no control-plane Node is observed any more,
// the node tracker must not strip the VIP pair from every port.
func TestM5ZeroControlPlaneNodesKeepPairs(t *testing.T) {
	// A single control-plane node, as in a single-node self-hosted shoot.
	e, ctx := begin(t, false)
	only := e.nodes[0]
	setLabel(t, ctx, e, only.name, true)
	time.Sleep(300 * time.Millisecond)
	_, identity := createExposure(t, ctx, e, nil, true)
	vip := assertExact(t, ctx, e, identity, 1)

	setLabel(t, ctx, e, only.name, false)
	// The tracker reacts within milliseconds; give it ample time to do the wrong thing.
	time.Sleep(3 * time.Second)
	if holders := pairHolders(t, ctx, e, vip); len(holders) != 1 {
		t.Errorf("with no control-plane Node observed, the VIP pair is on %v; want it kept on %s", holders, only.name)
	}
}

// TestM5PairStaysUntilAgentGone: a node that leaves the control plane keeps its VIP pair
// while its agent pod exists, and loses it once the pod is gone.
func TestM5PairStaysUntilAgentGone(t *testing.T) {
	e, ctx := begin(t, true)
	time.Sleep(300 * time.Millisecond)
	_, identity := createExposure(t, ctx, e, nil, true)
	vip := assertExact(t, ctx, e, identity, 3)

	leaving := e.nodes[2]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-agent-m5", Namespace: ns, Labels: agentrollout.Labels()},
		Spec:       corev1.PodSpec{NodeName: leaving.name, Containers: []corev1.Container{{Name: agentrollout.Name, Image: "example.org/kube-vip-agent:test"}}},
	}
	if err := e.cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })

	setLabel(t, ctx, e, leaving.name, false)
	t.Cleanup(func() { e.setControlPlane(t, context.Background(), true) })
	time.Sleep(3 * time.Second)
	if holders := pairHolders(t, ctx, e, vip); !slices.Contains(holders, leaving.name) {
		t.Fatalf("the pair left %s while its agent pod still runs; holders %v", leaving.name, holders)
	}

	if err := e.cp.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(converge)
	for slices.Contains(pairHolders(t, ctx, e, vip), leaving.name) {
		if time.Now().After(deadline) {
			t.Fatalf("the pair stays on %s after its agent pod is gone", leaving.name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if holders := pairHolders(t, ctx, e, vip); len(holders) != 2 {
		t.Errorf("holders %v, want the two remaining control-plane nodes", holders)
	}
}

// copySecret creates a copy of the cloudprovider Secret with changed keys.
func copySecret(t *testing.T, ctx context.Context, e *sharedEnv, name string, change map[string]string) *corev1.Secret {
	t.Helper()
	src := &corev1.Secret{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: framework.CloudProviderSecretName}, src); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
	for k, v := range src.Data {
		s.Data[k] = v
	}
	for k, v := range change {
		s.Data[k] = []byte(v)
	}
	if err := e.cp.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), s) })
	return s
}

func useSecret(name string) func(*extensionsv1alpha1.SelfHostedShootExposure) {
	return func(exp *extensionsv1alpha1.SelfHostedShootExposure) { exp.Spec.CredentialsRef.Name = name }
}

// waitLastError waits until the exposure's lastError carries code.
func waitLastError(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, code gardencorev1beta1.ErrorCode) *gardencorev1beta1.LastError {
	t.Helper()
	var last *gardencorev1beta1.LastError
	(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "lastError with "+string(code), func(x *extensionsv1alpha1.SelfHostedShootExposure, err error) bool {
		last = x.Status.LastError
		return err == nil && last != nil && slices.Contains(last.Codes, code)
	})
	return last
}

// TestM8WrongPasswordKeystoneRate: with a wrong password, the controller logs in to
// Keystone once and then backs off for a minute, however often it reconciles; a fixed
// password converges without waiting for that minute.
func TestM8WrongPasswordKeystoneRate(t *testing.T) {
	e, ctx := begin(t, true)
	secret := copySecret(t, ctx, e, "wrong-password", map[string]string{openstack.KeyPassword: "not-the-password"})

	e.proxy.Arm(nil)
	exp, _ := createExposure(t, ctx, e, useSecret(secret.Name), false)
	last := waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraUnauthenticated)
	const window = 10 * time.Second
	time.Sleep(window)
	logins := 0
	for _, c := range e.proxy.Calls() {
		if c.Service == "identity" && c.Method == "POST" && strings.HasSuffix(c.Class, "/auth/tokens") {
			logins++
		}
	}
	t.Logf("Keystone logins with the wrong password in about %s: %d; lastError: %s", window, logins, last.Description)
	if logins != 1 {
		t.Errorf("%d Keystone logins with a rejected password, want 1 (then a backoff of a minute)", logins)
	}

	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data[openstack.KeyPassword] = []byte(e.os.Password)
	if err := e.cp.Client.Patch(ctx, secret, patch); err != nil {
		t.Fatal(err)
	}
	(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "the exposure to succeed with the fixed password", succeeded)
}

// TestM8WrongKeystonePath: a Keystone URL without the v3 token API is a configuration
// error, not a transient one.
func TestM8WrongKeystonePath(t *testing.T) {
	e, ctx := begin(t, true)
	secret := copySecret(t, ctx, e, "wrong-path", map[string]string{openstack.KeyAuthURL: strings.TrimSuffix(e.proxy.KeystoneURL(), "/v3") + "/identity/v3"})
	exp, _ := createExposure(t, ctx, e, useSecret(secret.Name), false)
	last := waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
	if !strings.Contains(last.Description, "/v3") {
		t.Errorf("lastError does not say which URL is wrong: %s", last.Description)
	}
	// The deletion needs working credentials too.
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data[openstack.KeyAuthURL] = []byte(e.proxy.KeystoneURL())
	if err := e.cp.Client.Patch(ctx, secret, patch); err != nil {
		t.Fatal(err)
	}
}

// TestM8WrongFloatingNetworkID: a floating network ID that does not exist makes the
// floating IP create fail with 404; that is a configuration error, and nothing leaks.
func TestM8WrongFloatingNetworkID(t *testing.T) {
	e, ctx := begin(t, true)
	exp, _ := createExposure(t, ctx, e, func(exp *extensionsv1alpha1.SelfHostedShootExposure) {
		exp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingNetworkID":"00000000-0000-4000-8000-000000000000"}`)}
	}, false)
	waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
}

// TestM1LateCommittedPortCreate: the VIP port create is held until the client timed out
// and its retry has listed the ports, and only then reaches Neutron. The controller must
// converge to one VIP port (resolving the duplicate that is its own), not sit in a
// permanent "delete all but one" error. The fix of M1 is in the exposure flow.
func TestM1LateCommittedPortCreate(t *testing.T) {
	e, ctx := begin(t, true)
	time.Sleep(300 * time.Millisecond)
	e.proxy.Arm(&faults.Fault{Kind: faults.LateCommit, Index: 0})
	t.Cleanup(func() { e.proxy.Arm(nil) })
	exp, identity := createExposure(t, ctx, e, nil, true)

	// Wait until the held create has reached Neutron.
	deadline := time.Now().Add(converge)
	for !slices.ContainsFunc(e.proxy.Calls(), func(c faults.Call) bool { return c.Fault == faults.LateCommit && c.Upstream != 0 }) {
		if time.Now().After(deadline) {
			t.Fatal("the held port create was never forwarded")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ps, _ := mustLeftovers(t, ctx, e, identity)
	t.Logf("VIP ports after the late commit: %d", len(ps))

	// A change of the inputs makes the controller read the ports back.
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Port = 6444
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	if err := e.cp.Client.Patch(ctx, current, patch); err != nil {
		t.Fatal(err)
	}
	(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "the exposure to succeed after reading the ports back", succeeded)
	assertExact(t, ctx, e, identity, 3)
}

// TestLateCommittedFloatingIPIsKept: the floating IP create is held until the client timed
// out, and commits between the retry's two reads: the exposure's marked floating IPs (none
// yet), then those on the VIP port (now the held one). That one is the exposure's own: the
// retry must take it, not disassociate it as a stranger's and allocate a second address.
func TestLateCommittedFloatingIPIsKept(t *testing.T) {
	e, ctx := begin(t, false)
	time.Sleep(300 * time.Millisecond)
	e.proxy.Arm(&faults.Fault{Kind: faults.LateCommit, Call: "POST /v2.0/floatingips", CommitBefore: http.MethodGet})
	t.Cleanup(func() { e.proxy.Arm(nil) })
	exp, identity := createExposure(t, ctx, e, nil, false)
	o := &observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}
	o.poll(ctx, "the exposure to succeed", succeeded)

	held := slices.IndexFunc(e.proxy.Calls(), func(c faults.Call) bool { return c.Fault == faults.LateCommit })
	if held < 0 {
		t.Fatal("no call was held")
	}
	if c := e.proxy.Calls()[held]; c.Method != http.MethodPost || c.Class != "/v2.0/floatingips" || c.Upstream != http.StatusCreated {
		t.Fatalf("the held call is %s %s with Neutron's answer %d, want the floating IP create, committed (201)", c.Method, c.Class, c.Upstream)
	}
	assertExact(t, ctx, e, identity, 0)
	if len(o.seen) > 0 {
		t.Errorf("non-retryable errors on the way: %v", o.seen)
	}
}

// TestPinnedVIPLateCommittedCreate: with a pinned vipAddress, the VIP port create is held
// until the client gave up and its retry listed the ports; it then commits and the retry's
// create finds the address taken (IpAddressAlreadyAllocated). That is the exposure's own
// port, not a configuration problem (which would fail gardenadm init): the exposure
// converges on the pinned address without a non-retryable error.
func TestPinnedVIPLateCommittedCreate(t *testing.T) {
	e, ctx := begin(t, true)
	vip := ""
	for b := 30; b < 90 && vip == ""; b++ {
		candidate := fmt.Sprintf("198.18.0.%d", b)
		if list, err := e.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: e.os.NetworkID, FixedIPs: []string{candidate}}); err == nil && len(list) == 0 {
			vip = candidate
		}
	}
	if vip == "" {
		t.Fatal("no free address in the node subnet")
	}
	time.Sleep(300 * time.Millisecond)
	e.proxy.Arm(&faults.Fault{Kind: faults.LateCommit, Index: 0})
	t.Cleanup(func() { e.proxy.Arm(nil) })
	exp, identity := createExposure(t, ctx, e, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
		x.Spec.ProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAddress":%q}`, vip)}
	}, false)
	o := &observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}
	o.poll(ctx, "the exposure to succeed", succeeded)
	if len(o.seen) > 0 {
		t.Errorf("non-retryable errors on the way: %v", o.seen)
	}
	late := slices.ContainsFunc(e.proxy.Calls(), func(c faults.Call) bool { return c.Fault == faults.LateCommit && c.Upstream != 0 })
	t.Logf("the held create reached Neutron: %v", late)
	if st := providerStatus(t, ctx, e, exp); st.VIPAddress != vip {
		t.Errorf("VIP %s, want the pinned %s", st.VIPAddress, vip)
	}
	assertExact(t, ctx, e, identity, 3)
}
