// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// fakeAgent is an AgentDeployer that records what the actuator asks of it.
type fakeAgent struct {
	mu       sync.Mutex
	deployed []agentrollout.Spec
	deleted  int
	forced   int
	// remaining: agent pods are still terminating.
	remaining bool
	// status is what Status reports; nil: one ready pod on cp-0 holds the Lease.
	status *v1alpha1.AgentStatus
}

func (f *fakeAgent) Deploy(_ context.Context, spec agentrollout.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deployed = append(f.deployed, spec)
	return nil
}

func (f *fakeAgent) Delete(context.Context, string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted++
	return !f.remaining, nil
}

func (f *fakeAgent) ForceDelete(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forced++
	return nil
}

func (f *fakeAgent) Status(context.Context, string) (*v1alpha1.AgentStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status != nil {
		return f.status.DeepCopy(), nil
	}
	return &v1alpha1.AgentStatus{LeaseHolder: "cp-0", HolderReady: true, DesiredPods: 1, ReadyPods: 1}, nil
}

// unreachableCloud is a ClientFactory whose Keystone never answers; it counts the
// attempts, which tell whether the actuator went to OpenStack at all.
type unreachableCloud struct{ calls int }

var errKeystoneDown = errors.New("keystone does not answer")

func (u *unreachableCloud) Network(context.Context, openstack.AuthConfig) (*openstack.Network, error) {
	u.calls++
	return nil, errKeystoneDown
}

// fakeCluster is an exposure in kube-system of a Shoot in region-1 with its credentials, in a
// fake kube-apiserver, with the agent and OpenStack faked.
type fakeCluster struct {
	a       *Actuator
	c       client.Client
	exp     *extensionsv1alpha1.SelfHostedShootExposure
	cluster *extensionscontroller.Cluster
	agent   *fakeAgent
	cloud   *unreachableCloud
	clock   *testingclock.FakeClock
	events  *events.FakeRecorder
}

// testShoot is the cluster's Shoot: shoot--p--shoot (UID shoot-a) in region-1.
func testShoot() *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "garden-p"},
		Spec:       gardencorev1beta1.ShootSpec{Region: "region-1"},
		Status:     gardencorev1beta1.ShootStatus{TechnicalID: "shoot--p--shoot", UID: "shoot-a"},
	}
}

const exposureConfig = `{` + header + `,"networkID":"net","subnetID":"sub","floatingNetworkID":"ext"}`

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{extensionsv1alpha1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// newCluster builds the fakeCluster; edit changes the exposure and the objects before the
// fake kube-apiserver is built.
func newCluster(t *testing.T, edit func(exp *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret), objs ...client.Object) *fakeCluster {
	t.Helper()
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "kube-system", UID: "uid-self"},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: DefaultType, ProviderConfig: &runtime.RawExtension{Raw: []byte(exposureConfig)}},
			CredentialsRef: &corev1.ObjectReference{Kind: "Secret", Name: "cloudprovider"},
			Port:           443,
		},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloudprovider", Namespace: "kube-system", UID: "secret-uid"}, Data: map[string][]byte{
		openstack.KeyDomainName: []byte("domain"), openstack.KeyTenantName: []byte("project"),
		openstack.KeyUserName: []byte("user"), openstack.KeyPassword: []byte("hunter2"),
		openstack.KeyAuthURL: []byte("https://keystone.example:5000/v3"),
	}}
	if edit != nil {
		edit(exp, secret)
	}
	// The exposure's Namespace: its UID is part of the VIP port's mark.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "namespace-uid"}}
	b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(exp, namespace).WithStatusSubresource(exp).WithObjects(objs...)
	if secret.Name != "" {
		b = b.WithObjects(secret)
	}
	c := b.Build()
	cl := &fakeCluster{
		c:       c,
		exp:     exp,
		agent:   &fakeAgent{},
		cloud:   &unreachableCloud{},
		clock:   testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)),
		events:  events.NewFakeRecorder(100),
		cluster: &extensionscontroller.Cluster{Shoot: testShoot()},
	}
	cl.a = &Actuator{client: c, reader: c, events: cl.events, failures: map[types.UID]int{}, opts: ActuatorOptions{
		ClientFactory: cl.cloud, Agent: cl.agent, AgentImage: "agent:test", VerifyInterval: 5 * time.Minute, Clock: cl.clock,
		InfrastructureWait: time.Second, MinBackoff: time.Second, MaxBackoff: time.Minute, FrontDoorProbe: FrontDoorOff,
		AgentRefreshInterval: time.Minute,
	}}
	return cl
}

// recordStatus writes status into the exposure, as an earlier reconciliation did.
func (cl *fakeCluster) recordStatus(t *testing.T, status *v1alpha1.ExposureStatus) {
	t.Helper()
	if err := cl.a.patchStatus(t.Context(), cl.exp, status); err != nil {
		t.Fatal(err)
	}
}

// stored is the exposure's status as the kube-apiserver has it.
func (cl *fakeCluster) stored(t *testing.T) *v1alpha1.ExposureStatus {
	t.Helper()
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(cl.exp), exp); err != nil {
		t.Fatal(err)
	}
	status, err := DecodeStatus(exp)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// drainEvents returns the Events recorded so far.
func (cl *fakeCluster) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-cl.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// verified is the status of a front door that was verified at verifiedAt with the inputs
// the cluster has now.
func (cl *fakeCluster) verified(t *testing.T, verifiedAt time.Time) *v1alpha1.ExposureStatus {
	t.Helper()
	status := &v1alpha1.ExposureStatus{Identity: "shoot--p--shoot", Owner: "uid-self", NetworkID: "net", SubnetID: "sub", PortID: "port-1",
		VIPAddress: "198.18.0.100", FloatingIPID: "fip-1", FloatingIPAddress: "198.19.0.5", Ingress: "198.19.0.5",
		VerifiedAt: &metav1.Time{Time: verifiedAt}}
	in, err := cl.a.gatherInputs(t.Context(), cl.exp, cl.cluster, status)
	if err != nil {
		t.Fatalf("gathering the inputs: %v", err)
	}
	status.InputsHash = in.hash("agent:test")
	return status
}

func TestReconcileOfAnUnchangedRecentlyVerifiedExposureMakesNoOpenStackCall(t *testing.T) {
	cl := newCluster(t, nil)
	cl.recordStatus(t, cl.verified(t, cl.clock.Now().Add(-time.Minute)))
	got, err := cl.a.Reconcile(t.Context(), logr.Discard(), cl.exp, cl.cluster)
	if err != nil {
		t.Fatal(err)
	}
	if cl.cloud.calls != 0 {
		t.Errorf("%d OpenStack logins for an unchanged exposure", cl.cloud.calls)
	}
	if len(got) != 1 || got[0].IP != "198.19.0.5" {
		t.Errorf("ingress %v, want the floating IP", got)
	}
	if len(cl.agent.deployed) != 1 || cl.agent.deployed[0].VIP != "198.18.0.100" || cl.agent.deployed[0].APIServerPort != 443 {
		t.Errorf("agent deployments %+v, want one for the VIP on port 443", cl.agent.deployed)
	}
	stored := cl.stored(t)
	// The front door is not probed here (off): the condition is recorded, as Unknown.
	if meta.FindStatusCondition(stored.Conditions, v1alpha1.ConditionVIPHeld) == nil || stored.Agent == nil || stored.Agent.LeaseHolder != "cp-0" {
		t.Errorf("stored status %+v, want VIPHeld and the agent's holder recorded", stored)
	}
}

func TestReconcileGoesToOpenStackWhenAVerificationIsDue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(cl *fakeCluster)
		age   time.Duration
	}{
		{"the verify interval has passed", nil, 6 * time.Minute},
		{"an operator asked for it", func(cl *fakeCluster) { cl.a.verifications.request(cl.exp.UID) }, time.Minute},
		{"the inputs changed", func(cl *fakeCluster) { cl.exp.Spec.Port = 6443 }, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, nil)
			cl.recordStatus(t, cl.verified(t, cl.clock.Now().Add(-tc.age)))
			if tc.setup != nil {
				tc.setup(cl)
			}
			_, err := cl.a.Reconcile(t.Context(), logr.Discard(), cl.exp, cl.cluster)
			if !errors.Is(err, errKeystoneDown) || cl.cloud.calls != 1 {
				t.Fatalf("got %v after %d logins, want one login and its error", err, cl.cloud.calls)
			}
			if len(cl.agent.deployed) != 0 {
				t.Errorf("the agent was rolled out without a verified front door: %+v", cl.agent.deployed)
			}
			// The failure is recorded; the front door found earlier is kept.
			stored := cl.stored(t)
			if stored.PortID != "port-1" || stored.Ingress != "198.19.0.5" {
				t.Errorf("stored status %+v lost the recorded front door", stored)
			}
		})
	}
}

func TestReconcileRefusesInputsItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(exp *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret)
		shoot    func(s *gardencorev1beta1.Shoot)
		mentions string
	}{
		{"no TCP port", func(exp *extensionsv1alpha1.SelfHostedShootExposure, _ *corev1.Secret) { exp.Spec.Port = 0 }, nil, "spec.port 0"},
		{"an invalid provider config", func(exp *extensionsv1alpha1.SelfHostedShootExposure, _ *corev1.Secret) {
			exp.Spec.ProviderConfig.Raw = []byte(`{` + header + `,"networkId":"typo"}`)
		}, nil, "provider config"},
		{"no credentialsRef", func(exp *extensionsv1alpha1.SelfHostedShootExposure, _ *corev1.Secret) { exp.Spec.CredentialsRef = nil }, nil, "spec.credentialsRef is not set"},
		{"credentials in a ConfigMap", func(exp *extensionsv1alpha1.SelfHostedShootExposure, _ *corev1.Secret) {
			exp.Spec.CredentialsRef.Kind = "ConfigMap"
		}, nil, "not a ConfigMap"},
		{"a missing Secret", func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) { secret.Name = "" }, nil, "kube-system/cloudprovider does not exist"},
		{"a Secret without the project", func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) {
			delete(secret.Data, openstack.KeyTenantName)
		}, nil, openstack.KeyTenantName},
		{"no Keystone URL anywhere", func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) {
			delete(secret.Data, openstack.KeyAuthURL)
		}, nil, "no Keystone URL"},
		{"a Shoot without region", nil, func(s *gardencorev1beta1.Shoot) { s.Spec.Region = "" }, "no shoot with a region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, tc.edit)
			if tc.shoot != nil {
				tc.shoot(cl.cluster.Shoot)
			}
			_, err := cl.a.Reconcile(t.Context(), logr.Discard(), cl.exp, cl.cluster)
			codes := v1beta1helper.ExtractErrorCodes(err)
			if !slices.Contains(codes, gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("got %v (codes %v), want a configuration problem mentioning %q", err, codes, tc.mentions)
			}
			// A configuration problem is not retried with backoff: the operator must act.
			var requeue *reconcilerutils.RequeueAfterError
			if errors.As(err, &requeue) {
				t.Errorf("a configuration problem was requeued: %v", err)
			}
			if cl.cloud.calls != 0 || len(cl.agent.deployed) != 0 {
				t.Errorf("%d logins and %d agent rollouts before the inputs were valid", cl.cloud.calls, len(cl.agent.deployed))
			}
		})
	}
}

func TestReconcileTakesTheKeystoneURLFromTheCloudProfile(t *testing.T) {
	cl := newCluster(t, func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) {
		delete(secret.Data, openstack.KeyAuthURL)
	})
	cl.cluster.CloudProfile = &gardencorev1beta1.CloudProfile{Spec: gardencorev1beta1.CloudProfileSpec{ProviderConfig: &runtime.RawExtension{
		Raw: []byte(`{"keystoneURL":"https://default.example/v3","keystoneURLs":[{"region":"region-1","url":"https://region-1.example/v3","caCert":"CA"}]}`)}}}
	auth, version, err := cl.a.resolveAuth(t.Context(), cl.exp, cl.cluster)
	if err != nil {
		t.Fatal(err)
	}
	if auth.AuthURL != "https://region-1.example/v3" || auth.CloudProfileCACert != "CA" || auth.Region != "region-1" {
		t.Errorf("auth %+v, want the region's Keystone and CA", auth)
	}
	// The version names the Secret's identity, never its data.
	if strings.Contains(version, "hunter2") || !strings.HasPrefix(version, "secret-uid/") {
		t.Errorf("secret version %q", version)
	}
}

func TestDeleteOfAnExposureThatNeverCreatedAnything(t *testing.T) {
	// Wrong credentials cannot block the deletion of an exposure that made nothing.
	cl := newCluster(t, func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) { secret.Name = "" })
	if err := cl.a.Delete(t.Context(), logr.Discard(), cl.exp, cl.cluster); err != nil {
		t.Fatal(err)
	}
	if cl.agent.deleted != 1 {
		t.Errorf("agent deleted %d times, want once", cl.agent.deleted)
	}
	if evs := cl.drainEvents(); !slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, eventDeletedWithoutCleanup) }) {
		t.Errorf("events %v, want %s", evs, eventDeletedWithoutCleanup)
	}
}

func TestDeleteOfAnExposureThatCreatedSomethingNeedsOpenStack(t *testing.T) {
	cl := newCluster(t, func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) { secret.Name = "" })
	cl.recordStatus(t, &v1alpha1.ExposureStatus{Identity: "shoot--p--shoot", PortID: "port-1", VIPAddress: "198.18.0.100"})
	err := cl.a.Delete(t.Context(), logr.Discard(), cl.exp, cl.cluster)
	if !strings.Contains(fmt.Sprint(err), "does not exist") {
		t.Fatalf("got %v, want the missing credentials: the port must not be orphaned silently", err)
	}
	if stored := cl.stored(t); stored.PortID != "port-1" {
		t.Errorf("stored status %+v forgot the port", stored)
	}
}

func TestDeleteWaitsForTheAgentPods(t *testing.T) {
	cl := newCluster(t, nil)
	cl.agent.remaining = true
	err := cl.a.Delete(t.Context(), logr.Discard(), cl.exp, cl.cluster)
	var requeue *reconcilerutils.RequeueAfterError
	if !errors.As(err, &requeue) || !errors.Is(requeue.Cause, errAgentPodsRemain) {
		t.Fatalf("got %v, want a requeue while the agent pods remain", err)
	}
	if cl.cloud.calls != 0 {
		t.Error("OpenStack was cleaned up while an agent pod may still hold the VIP")
	}
}

func TestDeleteSparesTheAgentOfAnotherExposure(t *testing.T) {
	// This exposure was refused as a second one of the cluster and never had a VIP.
	other := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: "kube-system", UID: "uid-first"}}
	for _, force := range []bool{false, true} {
		cl := newCluster(t, func(_ *extensionsv1alpha1.SelfHostedShootExposure, secret *corev1.Secret) { secret.Name = "" }, other.DeepCopy())
		var err error
		if force {
			err = cl.a.ForceDelete(t.Context(), logr.Discard(), cl.exp, cl.cluster)
		} else {
			err = cl.a.Delete(t.Context(), logr.Discard(), cl.exp, cl.cluster)
		}
		if err != nil {
			t.Fatalf("force %v: %v", force, err)
		}
		if cl.agent.deleted != 0 || cl.agent.forced != 0 {
			t.Errorf("force %v: the other exposure's agent was deleted (%d, forced %d)", force, cl.agent.deleted, cl.agent.forced)
		}
	}
}

func TestForceDeleteNeverBlocks(t *testing.T) {
	cl := newCluster(t, nil)
	cl.recordStatus(t, &v1alpha1.ExposureStatus{Identity: "shoot--p--shoot", PortID: "port-1", VIPAddress: "198.18.0.100"})
	if err := cl.a.ForceDelete(t.Context(), logr.Discard(), cl.exp, cl.cluster); err != nil {
		t.Fatalf("got %v, want nil although OpenStack cannot be reached", err)
	}
	if cl.agent.forced != 1 || cl.cloud.calls != 1 {
		t.Errorf("agent force-deleted %d times, %d logins; want one each", cl.agent.forced, cl.cloud.calls)
	}
}

func TestDeleteRemovesThePairLabelOfItsVIPOnly(t *testing.T) {
	// Without the label no agent runs on the node: it must go before the pair does.
	const vip = "198.18.0.100"
	cp := func(value string) map[string]string {
		return map[string]string{LabelControlPlane: "", agentrollout.PairLabel: value}
	}
	cl := newCluster(t, nil,
		node("cp-0", "uid-0", cp(agentrollout.PairLabelValue(vip))),
		node("cp-other", "uid-1", cp(agentrollout.PairLabelValue("198.18.0.200"))))
	cl.recordStatus(t, &v1alpha1.ExposureStatus{Identity: "shoot--p--shoot", PortID: "port-1", VIPAddress: vip})
	if err := cl.a.Delete(t.Context(), logr.Discard(), cl.exp, cl.cluster); !errors.Is(err, errKeystoneDown) {
		t.Fatalf("got %v, want the OpenStack error after the labels were removed", err)
	}
	for name, want := range map[string]bool{"cp-0": false, "cp-other": true} {
		n := &corev1.Node{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		if _, has := n.Labels[agentrollout.PairLabel]; has != want {
			t.Errorf("%s has the pair label %v, want %v", name, has, want)
		}
	}
}
