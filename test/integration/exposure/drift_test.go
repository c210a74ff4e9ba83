// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// repairBudget is how long an explicit reconcile may take to repair drift (issue: ≤ 30 s).
const repairBudget = 30 * time.Second

// frontDoor starts the controller, creates an exposure of a new identity on n nodes, waits
// until it succeeded, and returns it with its first status.
func frontDoor(t *testing.T, ctx context.Context, e *sharedEnv, n int) (*extensionsv1alpha1.SelfHostedShootExposure, []nodeFixture, *v1alpha1.ExposureStatus, string) {
	t.Helper()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, n)
	startController(t, e)
	exp := newExposure(exposureOptions{name: identity, nodes: nodes})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	status, err := exposure.DecodeStatus(got)
	if err != nil {
		t.Fatal(err)
	}
	if status.FloatingIPAddress == "" || status.VIPAddress == "" || got.Status.Ingress[0].IP != status.FloatingIPAddress {
		t.Fatalf("incomplete front door: %+v", status)
	}
	return exp, nodes, status, identity
}

// repair triggers an explicit reconcile (gardener.cloud/operation=reconcile, as an operator
// would) and asserts that the front door is back on the same addresses within the budget,
// with exactly one port and one floating IP of the cluster.
func repair(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, nodes []nodeFixture, before *v1alpha1.ExposureStatus, identity string) *v1alpha1.ExposureStatus {
	t.Helper()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, repairBudget)
	defer cancel()
	got := triggerReconcile(t, rctx, e, exp, nil)()
	t.Logf("repaired in %s", time.Since(start).Round(time.Millisecond))
	after, err := exposure.DecodeStatus(got)
	if err != nil {
		t.Fatal(err)
	}
	if after.VIPAddress != before.VIPAddress || after.FloatingIPAddress != before.FloatingIPAddress || got.Status.Ingress[0].IP != before.FloatingIPAddress {
		t.Fatalf("the front door moved: VIP %s -> %s, floating IP %s -> %s, ingress %v",
			before.VIPAddress, after.VIPAddress, before.FloatingIPAddress, after.FloatingIPAddress, got.Status.Ingress)
	}
	tagged := taggedPorts(t, ctx, e, identity)
	if len(tagged) != 1 || tagged[0].ID != after.PortID {
		t.Fatalf("Neutron has %d ports tagged for the cluster, want exactly the VIP port %s", len(tagged), after.PortID)
	}
	if a := openstack.PortAddress(&tagged[0], ""); a != before.VIPAddress {
		t.Errorf("the VIP port holds %s, want %s", a, before.VIPAddress)
	}
	owned, err := e.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{Description: fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s, owner %s (gardener-extension-kube-vip); do not delete", identity, after.Owner)})
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || owned[0].PortID != after.PortID || owned[0].FloatingIP != before.FloatingIPAddress {
		t.Fatalf("owned floating IPs %v, want exactly %s on port %s (a second one would leak)", owned, before.FloatingIPAddress, after.PortID)
	}
	checkPairs(t, ctx, e, nodes, before.VIPAddress, true)
	return after
}

// driftRepaired builds a front door, lets drift change it behind the extension's back and
// waits until repair finds it whole again. It returns the status before and after, and
// the cluster's identity.
func driftRepaired(t *testing.T, ctx context.Context, e *sharedEnv, drift func(before *v1alpha1.ExposureStatus) error) (before, after *v1alpha1.ExposureStatus, identity string) {
	t.Helper()
	exp, nodes, before, identity := frontDoor(t, ctx, e, 3)
	if err := drift(before); err != nil {
		t.Fatalf("the drift: %v", err)
	}
	return before, repair(t, ctx, e, exp, nodes, before, identity), identity
}

func TestDriftPortDeletedComesBackWithTheSameAddresses(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, after, _ := driftRepaired(t, ctx, e, func(before *v1alpha1.ExposureStatus) error {
		return e.neutron.DeletePort(ctx, before.PortID)
	})
	if after.PortID == before.PortID {
		t.Errorf("port ID %s unchanged although the port was deleted", after.PortID)
	}
	if after.FloatingIPID != before.FloatingIPID {
		t.Errorf("floating IP %s replaced by %s: the recorded one must be re-associated", before.FloatingIPID, after.FloatingIPID)
	}
}

func TestDriftFloatingIPDisassociatedIsReassociated(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, after, _ := driftRepaired(t, ctx, e, func(before *v1alpha1.ExposureStatus) error {
		return e.neutron.DisassociateFloatingIP(ctx, before.FloatingIPID)
	})
	if after.PortID != before.PortID || after.FloatingIPID != before.FloatingIPID {
		t.Errorf("port %s -> %s, floating IP %s -> %s: both must stay", before.PortID, after.PortID, before.FloatingIPID, after.FloatingIPID)
	}
}

func TestDriftPortRetaggedKeepsItsAddress(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, after, identity := driftRepaired(t, ctx, e, func(before *v1alpha1.ExposureStatus) error {
		return e.neutron.ReplacePortTags(ctx, before.PortID, []string{"retagged-by-someone"})
	})
	if after.PortID != before.PortID {
		t.Errorf("port %s replaced by %s", before.PortID, after.PortID)
	}
	p, err := e.neutron.GetPort(ctx, after.PortID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Tags, "retagged-by-someone") || !openstack.HasAllTags(p.Tags, []string{openstack.TagExtension, openstack.ClusterTag(identity)}) {
		t.Errorf("tags %v: want the cluster's tags back and the other tag kept", p.Tags)
	}
}

// TestDriftFloatingIPDeletedAndAllocatedAgainByAnAdmin: the floating IP is deleted out of
// band, and an admin allocates the same address again in the project with the exposure's
// description, as the exposure's error asks (the project's member may not choose an
// address under Neutron's default policy). The exposure takes that floating IP.
func TestDriftFloatingIPDeletedAndAllocatedAgainByAnAdmin(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := adminNetwork(t, ctx, e)
	var again *floatingips.FloatingIP
	_, after, _ := driftRepaired(t, ctx, e, func(before *v1alpha1.ExposureStatus) error {
		old, err := e.neutron.GetFloatingIP(ctx, before.FloatingIPID)
		if err != nil {
			return err
		}
		if err := e.neutron.DeleteFloatingIP(ctx, before.FloatingIPID); err != nil {
			return err
		}
		if again, err = floatingips.Create(ctx, admin.ServiceClient(), floatingips.CreateOpts{
			FloatingNetworkID: old.FloatingNetworkID, FloatingIP: old.FloatingIP, ProjectID: e.os.ProjectID, Description: old.Description,
		}).Extract(); err != nil {
			return fmt.Errorf("the admin allocating %s again: %w", old.FloatingIP, err)
		}
		t.Cleanup(func() { _ = e.neutron.DeleteFloatingIP(context.Background(), again.ID) })
		return nil
	})
	if after.FloatingIPID != again.ID {
		t.Errorf("floating IP %s recorded, want the one the admin allocated, %s", after.FloatingIPID, again.ID)
	}
}

// TestPinningTheCurrentFloatingIPKeepsIt: setting floatingIP to the address the exposure
// allocated makes it the user's: another address is refused, and the deletion of the
// exposure leaves it allocated, disassociated.
func TestPinningTheCurrentFloatingIPKeepsIt(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exp, _, before, _ := frontDoor(t, ctx, e, 3)
	// Pinned, the floating IP is the user's and outlives the exposure: release it at the end.
	t.Cleanup(func() { _ = e.neutron.DeleteFloatingIP(context.Background(), before.FloatingIPID) })

	got := triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
		x.Spec.ProviderConfig = rawConfig(fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingIP":%q}`, before.FloatingIPAddress))
	})()
	after, _ := exposure.DecodeStatus(got)
	if after.FloatingIPID != before.FloatingIPID || !after.FloatingIPAdopted || got.Status.Ingress[0].IP != before.FloatingIPAddress {
		t.Fatalf("after pinning: %+v, ingress %v; want floating IP %s kept and marked as the user's", after, got.Status.Ingress, before.FloatingIPID)
	}
	fip, err := e.neutron.GetFloatingIP(ctx, before.FloatingIPID)
	if err != nil || fip.PortID != before.PortID {
		t.Fatalf("floating IP %s: %v, port %v; want it still on the VIP port", before.FloatingIPID, err, fip)
	}

	t.Run("another address is refused and nothing is released", func(t *testing.T) {
		patchConfig(t, ctx, e, exp, `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingIP":"198.19.255.254"}`)
		got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
			return x.Status.LastError != nil && x.Status.ObservedGeneration == x.Generation
		})
		t.Logf("lastError: %s", got.Status.LastError.Description)
		if len(got.Status.Ingress) == 0 || got.Status.Ingress[0].IP != before.FloatingIPAddress {
			t.Errorf("ingress %v while refusing, want %s", got.Status.Ingress, before.FloatingIPAddress)
		}
		if fip, err := e.neutron.GetFloatingIP(ctx, before.FloatingIPID); err != nil || fip.PortID != before.PortID {
			t.Errorf("floating IP %s after a refused change: %v %v", before.FloatingIPID, fip, err)
		}
		// Back to the pinned address for the deletion.
		patchConfig(t, ctx, e, exp, fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingIP":%q}`, before.FloatingIPAddress))
		waitFor(t, ctx, e, exp, "success", succeeded)
	})

	// Pinned, it is the user's: deleting the exposure only disassociates it.
	deleteKeepsFloatingIP(t, ctx, e, exp, before.FloatingIPID)
}

func TestDeleteWithNeverWorkingCredentialsCompletes(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startController(t, e)
	identity := useIdentity(t, ctx, e)
	secretName := passwordSecret(t, ctx, e, identity, "never-worked-Zq90")
	deleteFailingExposure(t, ctx, e, identity, secretName)
}

// deleteFailingExposure creates an exposure with the credentials Secret, waits for its
// lastError, deletes it and fails unless the deletion completes within 30 s. It returns
// the exposure as last seen.
func deleteFailingExposure(t *testing.T, ctx context.Context, e *sharedEnv, identity, secretName string) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	exp := newExposure(exposureOptions{name: identity, secretName: secretName})
	if err := e.cp.Client.Create(ctx, exp); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool { return x.Status.LastError != nil })
	t.Logf("lastError: %s", got.Status.LastError.Description)
	if err := e.cp.Client.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	if err := waitGone(dctx, e, exp); err != nil {
		t.Fatalf("deletion of an exposure that never created anything in OpenStack did not complete: %v", err)
	}
	return got
}

// TestDeleteWithUnreachableOpenStackCompletes: an exposure whose Keystone URL never
// answered created nothing in OpenStack; its deletion completes, with an Event saying so.
func TestDeleteWithUnreachableOpenStackCompletes(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startController(t, e)
	identity := useIdentity(t, ctx, e)
	secretName := passwordSecret(t, ctx, e, identity, e.os.Password)
	// A closed port: the connection is refused, which is transient ("will retry").
	setSecretKeys(t, ctx, e, secretName, map[string]string{"authURL": "http://127.0.0.1:1/v3"})
	got := deleteFailingExposure(t, ctx, e, identity, secretName)
	if reasons := eventReasons(t, ctx, e, got); !slices.Contains(reasons, "DeletedWithoutOpenStackCleanup") {
		t.Errorf("Events %v, want DeletedWithoutOpenStackCleanup", reasons)
	}
}

func rawConfig(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// patchConfig changes the provider config with the operation annotation, as gardenlet does.
func patchConfig(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, config string) {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(current.DeepCopy())
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	current.Spec.ProviderConfig = rawConfig(config)
	if err := e.cp.Client.Patch(ctx, current, patch); err != nil {
		t.Fatal(err)
	}
}

// TestExposureWaitsForTheInfrastructure: at gardenadm init the Infrastructure is reconciled
// at the same time as the exposure. An exposure created before the Infrastructure has a
// status waits in Processing, without lastError, and succeeds once the status appears.
func TestExposureWaitsForTheInfrastructure(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)

	list := &extensionsv1alpha1.InfrastructureList{}
	if err := e.cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("want the one shared Infrastructure: %v, %d", err, len(list.Items))
	}
	infra := &list.Items[0]
	saved := infra.Status.ProviderStatus.DeepCopy()
	setStatus := func(raw *runtime.RawExtension) {
		t.Helper()
		current := &extensionsv1alpha1.Infrastructure{}
		if err := e.cp.Client.Get(context.Background(), client.ObjectKeyFromObject(infra), current); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(current.DeepCopy())
		current.Status.ProviderStatus = raw
		if err := e.cp.Client.Status().Patch(context.Background(), current, patch); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(nil)
	t.Cleanup(func() { setStatus(saved) })

	startController(t, e)
	exp := newExposure(exposureOptions{name: identity, nodes: nodes})
	create(t, ctx, e, exp, identity)

	// 5 s without an Infrastructure status: processing, never an error.
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
			t.Fatal(err)
		}
		if current.Status.LastError != nil || (current.Status.LastOperation != nil && current.Status.LastOperation.State != "Processing") {
			t.Fatalf("before the Infrastructure has a status: %s; want Processing without lastError", describe(current))
		}
	}
	setStatus(saved)
	got := waitFor(t, ctx, e, exp, "ingress once the Infrastructure has its status", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		if x.Status.LastError != nil {
			t.Fatalf("lastError on the way: %s", x.Status.LastError.Description)
		}
		return succeeded(x)
	})
	t.Logf("ingress %v", got.Status.Ingress)
}
