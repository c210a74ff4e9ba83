// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/faults"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// frontDoorOf is what an exposure owns in Neutron, as Neutron has it.
type frontDoorOf struct {
	portID, vip, fipID, fip string
	tags                    []string
}

func readFrontDoor(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) frontDoorOf {
	t.Helper()
	st := providerStatus(t, exp)
	port, err := e.neutron.GetPort(ctx, st.PortID)
	if err != nil {
		t.Fatalf("reading the VIP port %s: %v", st.PortID, err)
	}
	fips := floatingIPsOfPort(t, ctx, e, port.ID)
	if len(fips) != 1 {
		t.Fatalf("VIP port %s has %d floating IPs, want 1", port.ID, len(fips))
	}
	return frontDoorOf{portID: port.ID, vip: openstack.PortAddress(port, ""), fipID: fips[0].ID, fip: fips[0].FloatingIP, tags: port.Tags}
}

// checkFrontDoorIntact fails unless the port and floating IP of want still exist, hold
// the same addresses, are associated, and carry the same tags.
func checkFrontDoorIntact(t *testing.T, ctx context.Context, e *sharedEnv, want frontDoorOf, what string) {
	t.Helper()
	port, err := e.neutron.GetPort(ctx, want.portID)
	if err != nil {
		t.Fatalf("%s: the owner's VIP port %s: %v", what, want.portID, err)
	}
	if got := openstack.PortAddress(port, ""); got != want.vip || !slices.Equal(port.Tags, want.tags) {
		t.Errorf("%s: the owner's VIP port has %s with tags %v, want %s with %v", what, got, port.Tags, want.vip, want.tags)
	}
	fips := floatingIPsOfPort(t, ctx, e, want.portID)
	if len(fips) != 1 || fips[0].ID != want.fipID || fips[0].FloatingIP != want.fip {
		t.Errorf("%s: the owner's VIP port has floating IPs %+v, want only %s", what, fips, want.fip)
	}
}

// TestSecondExposureRefused: a second exposure of the same cluster (same namespace, so the
// same identity) is refused with an error naming the owner and touches nothing of it;
// deleting the refused exposure deletes nothing of the owner's, its agent included.
func TestSecondExposureRefused(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	startController(t, e)

	first := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, first, id)
	first = waitFor(t, ctx, e, first, "the first exposure", succeeded)
	owner := readFrontDoor(t, ctx, e, first)
	if !slices.Contains(owner.tags, openstack.OwnerTag(string(first.UID))) {
		t.Errorf("the VIP port's tags %v do not name the owner %s", owner.tags, first.UID)
	}
	if got := providerStatus(t, first).Owner; got != string(first.UID) {
		t.Errorf("providerStatus.owner %q, want the exposure's UID %s", got, first.UID)
	}

	second, refused := secondExposure(t, ctx, e, id, nodes)
	le := refused.Status.LastError
	t.Logf("lastError: %s %v", le.Description, le.Codes)
	if !strings.Contains(le.Description, ns+"/"+first.Name) || !strings.Contains(le.Description, owner.portID) {
		t.Errorf("lastError %q does not name the owner %s/%s and its port %s", le.Description, ns, first.Name, owner.portID)
	}
	if !slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Errorf("codes %v, want %s", le.Codes, gardencorev1beta1.ErrorConfigurationProblem)
	}
	if len(refused.Status.Ingress) > 0 {
		t.Errorf("the refused exposure shows ingress %v", refused.Status.Ingress)
	}
	if st := providerStatus(t, refused); st.PortID != "" || st.FloatingIPID != "" {
		t.Errorf("the refused exposure recorded port %q and floating IP %q", st.PortID, st.FloatingIPID)
	}
	checkFrontDoorIntact(t, ctx, e, owner, "after the refusal")

	// Deleting the refused exposure deletes nothing of the owner's.
	deleteAndWait(t, ctx, e, second)
	checkFrontDoorIntact(t, ctx, e, owner, "after deleting the refused exposure")
	if err := e.cp.Client.Get(ctx, clientKey(agentrollout.Name), &appsv1.DaemonSet{}); err != nil {
		t.Errorf("the owner's agent DaemonSet: %v", err)
	}
	// And the owner still reconciles on the same addresses.
	got := triggerReconcile(t, ctx, e, first, nil)()
	if got.Status.Ingress[0].IP != owner.fip {
		t.Errorf("the owner's ingress %v after the refused exposure's deletion, want %s", got.Status.Ingress, owner.fip)
	}
}

// TestExposuresCreatedAtOnceGetOneFrontDoor: two exposures of one cluster created at the
// same instant, reconciled by the production's five workers, claim the front door one
// after the other: one Succeeds, the other is refused, and Neutron holds one VIP port and
// one floating IP of the cluster. Deleting the refused one leaves the front door.
func TestExposuresCreatedAtOnceGetOneFrontDoor(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	startController(t, e, func(s *controllerSetup) { s.workers = 5 })

	won, refused := createTwins(t, ctx, e, id, nodes)
	door := readFrontDoor(t, ctx, e, won)
	checkOneDoor(t, ctx, e, id, won, refused)
	deleteAndWait(t, ctx, e, refused)
	checkFrontDoorIntact(t, ctx, e, door, "after deleting the refused exposure")
}

// createTwins creates two exposures of the cluster at the same instant, deleted at the end,
// and waits for each one's first result; it fails the test unless one succeeded and the
// other was refused. The twins reach Neutron through a proxy that answers port lists half a
// second late, so that both have listed the cluster's ports before either creates one,
// unless their claims run one at a time; at full speed they interleave so only now and then.
func createTwins(t *testing.T, ctx context.Context, e *sharedEnv, id string, nodes []nodeFixture) (won, refused *extensionsv1alpha1.SelfHostedShootExposure) {
	t.Helper()
	proxy, err := faults.New(e.os.AuthURL, e.os.NeutronURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	proxy.Slow("GET /v2.0/ports", 500*time.Millisecond)
	secret := passwordSecret(t, ctx, e, id, e.os.Password)
	setSecretKeys(t, ctx, e, secret, map[string]string{"authURL": proxy.KeystoneURL()})
	twins := []*extensionsv1alpha1.SelfHostedShootExposure{
		newExposure(exposureOptions{name: id + "-a", nodes: nodes, secretName: secret}),
		newExposure(exposureOptions{name: id + "-b", nodes: nodes, secretName: secret}),
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for _, x := range twins {
			_ = e.cp.Client.Delete(ctx, x)
			_ = waitGone(ctx, e, x)
		}
		forceCleanup(ctx, e, id)
	})
	var wg sync.WaitGroup
	errs := make([]error, len(twins))
	for i, x := range twins {
		wg.Go(func() { errs[i] = e.cp.Client.Create(ctx, x) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var wins, refusals []*extensionsv1alpha1.SelfHostedShootExposure
	for _, x := range twins {
		x = waitFor(t, ctx, e, x, x.Name+"'s first result", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
			return succeeded(x) || failedReconcile(x)
		})
		if succeeded(x) {
			wins = append(wins, x)
		} else {
			refusals = append(refusals, x)
		}
	}
	if len(wins) != 1 || len(refusals) != 1 {
		t.Fatalf("%d exposures succeeded and %d failed, want one each; Neutron has %d VIP ports of the cluster", len(wins), len(refusals), len(taggedPorts(t, ctx, e, id)))
	}
	return wins[0], refusals[0]
}

// checkOneDoor: the refused exposure names the one that won, and Neutron holds one VIP
// port and one floating IP of the cluster.
func checkOneDoor(t *testing.T, ctx context.Context, e *sharedEnv, id string, won, refused *extensionsv1alpha1.SelfHostedShootExposure) {
	t.Helper()
	if le := refused.Status.LastError; !strings.Contains(le.Description, ns+"/"+won.Name) || !slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Errorf("the refused exposure's lastError %q %v does not name %s/%s with %s", le.Description, le.Codes, ns, won.Name, gardencorev1beta1.ErrorConfigurationProblem)
	}
	if tagged := taggedPorts(t, ctx, e, id); len(tagged) != 1 {
		t.Errorf("Neutron has %d VIP ports of the cluster, want 1", len(tagged))
	}
	if fips := clusterFloatingIPs(t, ctx, e, id); len(fips) != 1 {
		t.Errorf("Neutron has %d floating IPs of the cluster (%v), want 1", len(fips), fips)
	}
}

// secondExposure creates a second exposure of the cluster, deleted at the end, and waits
// until it is refused.
func secondExposure(t *testing.T, ctx context.Context, e *sharedEnv, id string, nodes []nodeFixture) (second, refused *extensionsv1alpha1.SelfHostedShootExposure) {
	t.Helper()
	second = newExposure(exposureOptions{name: id + "-second", nodes: nodes})
	if err := e.cp.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.cp.Client.Delete(ctx, second)
		_ = waitGone(ctx, e, second)
	})
	return second, waitFor(t, ctx, e, second, "the refusal", failedReconcile)
}

// secondCluster starts a kube-apiserver of its own for a second cluster, bootstrapped
// like the first one's and sharing its OpenStack project.
func secondCluster(t *testing.T, ctx context.Context, e *sharedEnv, who string, tweaks ...func(*framework.BootstrapOptions)) *sharedEnv {
	t.Helper()
	cp, err := framework.NewControlPlane()
	if err != nil {
		t.Fatalf("starting %s's kube-apiserver: %v", who, err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	opts := e.os.BootstrapOptions(framework.ApplicationCredential)
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	if err := framework.Bootstrap(ctx, cp.Client, opts); err != nil {
		t.Fatalf("bootstrapping %s: %v", who, err)
	}
	return &sharedEnv{cp: cp, os: e.os, neutron: e.neutron}
}

// TestTwoClustersWithTheSameShootNameDoNotCollide: two clusters (two kube-apiservers, each
// with its own controller) whose shoots share the project and the name, and so the
// technical ID, each get their own VIP port and floating IP in the shared OpenStack
// project; deleting one cluster's exposure deletes nothing of the other's.
func TestTwoClustersWithTheSameShootNameDoNotCollide(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e2 := secondCluster(t, ctx, e, "the second cluster")

	id := useIdentity(t, ctx, e)
	if err := framework.SetTechnicalID(ctx, e2.cp.Client, id); err != nil {
		t.Fatal(err)
	}
	nodes := createNodes(t, ctx, e, id, 1)
	startController(t, e)
	startController(t, e2)

	exp1 := newExposure(exposureOptions{name: id, nodes: nodes})
	exp2 := newExposure(exposureOptions{name: id, nodes: nodes})
	clusters := []struct {
		e   *sharedEnv
		exp *extensionsv1alpha1.SelfHostedShootExposure
	}{{e, exp1}, {e2, exp2}}
	for _, x := range clusters {
		if err := x.e.cp.Client.Create(ctx, x.exp); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for _, x := range clusters {
			_ = x.e.cp.Client.Delete(ctx, x.exp)
			_ = waitGone(ctx, x.e, x.exp)
		}
		forceCleanup(ctx, e, id)
	})
	exp1 = waitFor(t, ctx, e, exp1, "cluster 1's exposure", succeeded)
	exp2 = waitFor(t, ctx, e2, exp2, "cluster 2's exposure", succeeded)
	door1, door2 := readFrontDoor(t, ctx, e, exp1), readFrontDoor(t, ctx, e2, exp2)
	if door1.portID == door2.portID || door1.fipID == door2.fipID || door1.vip == door2.vip {
		t.Fatalf("the clusters share a front door: %+v and %+v", door1, door2)
	}
	if o1, o2 := providerStatus(t, exp1).Owner, providerStatus(t, exp2).Owner; o1 == "" || o1 == o2 {
		t.Errorf("owners %q and %q, want two different recorded owners", o1, o2)
	}

	// Deleting cluster 1's exposure leaves cluster 2's front door as it was.
	deleteAndWait(t, ctx, e, exp1)
	checkFrontDoorIntact(t, ctx, e, door2, "after deleting the other cluster's exposure")
	if _, err := e.neutron.GetPort(ctx, door1.portID); err == nil || !openstack.IsNotFound(err) {
		t.Errorf("cluster 1's VIP port %s after its deletion: %v, want gone", door1.portID, err)
	}
	got := triggerReconcile(t, ctx, e2, exp2, nil)()
	if got.Status.Ingress[0].IP != door2.fip {
		t.Errorf("cluster 2's ingress %v, want %s", got.Status.Ingress, door2.fip)
	}
}

// cloneCluster starts a second cluster made from a copy of the first one's node: same
// project, shoot name and Shoot UID (the UID is a file on the node), but a kube-apiserver,
// and so a Namespace UID, of its own; with its own controller. The clone's Infrastructure
// names e's network (tweaks change it).
func cloneCluster(t *testing.T, ctx context.Context, e *sharedEnv, id string, tweaks ...func(*framework.BootstrapOptions)) *sharedEnv {
	t.Helper()
	e2 := secondCluster(t, ctx, e, "the clone", tweaks...)
	cluster := &extensionsv1alpha1.Cluster{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: ns}, cluster); err != nil {
		t.Fatal(err)
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(cluster.Spec.Shoot.Raw, shoot); err != nil {
		t.Fatal(err)
	}
	if err := framework.SetTechnicalID(ctx, e2.cp.Client, id); err != nil {
		t.Fatal(err)
	}
	if err := framework.SetShootUID(ctx, e2.cp.Client, string(shoot.Status.UID)); err != nil {
		t.Fatal(err)
	}
	startController(t, e2)
	return e2
}

// firstCluster gives the shared cluster a fresh identity, starts its controller and creates
// an exposure of one node; it returns the identity and the front door once it succeeded.
func firstCluster(t *testing.T, ctx context.Context, e *sharedEnv) (id string, door frontDoorOf) {
	t.Helper()
	id = useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	startController(t, e)
	first := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, first, id)
	first = waitFor(t, ctx, e, first, "the first cluster's exposure", succeeded)
	return id, readFrontDoor(t, ctx, e, first)
}

// checkCloneGetsItsOwnDoor creates a node and an exposure in the clone e2, in the clone's
// network; the exposure must succeed with a front door of its own and leave the first
// cluster's door as it was, also once deleted, when its own port is gone.
func checkCloneGetsItsOwnDoor(t *testing.T, ctx context.Context, e, e2 *sharedEnv, id string, door frontDoorOf) {
	t.Helper()
	clone := newExposure(exposureOptions{name: id, nodes: createNodes(t, ctx, e2, id, 1)})
	if err := e2.cp.Client.Create(ctx, clone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		_ = e2.cp.Client.Delete(ctx, clone)
		_ = waitGone(ctx, e2, clone)
	})
	clone = waitFor(t, ctx, e2, clone, "the clone's exposure", succeeded)
	cloneDoor := readFrontDoor(t, ctx, e2, clone)
	if cloneDoor.portID == door.portID || cloneDoor.fipID == door.fipID {
		t.Errorf("the clone took the first cluster's front door: %+v", cloneDoor)
	}
	if owner := providerStatus(t, clone).Owner; owner != string(clone.UID) {
		t.Errorf("the clone recorded owner %s, want its own UID %s", owner, clone.UID)
	}
	checkFrontDoorIntact(t, ctx, e, door, "after the clone's reconciliation")

	deleteAndWait(t, ctx, e2, clone)
	checkFrontDoorIntact(t, ctx, e, door, "after deleting the clone's exposure")
	if p, err := e.neutron.GetPort(ctx, cloneDoor.portID); err == nil || !openstack.IsNotFound(err) {
		t.Errorf("the clone's VIP port %s after its deletion: %+v, %v; want it gone", cloneDoor.portID, p, err)
	}
}

// TestClonedClusterOnTheSameNetworkGetsItsOwnDoor: a clone of the first cluster
// (cloneCluster) on the same network. Its exposure finds the first cluster's VIP port,
// whose owner is no exposure of its own: a lost exposure's, by the Shoot UID alone. The
// port's namespace tag names the first cluster's Namespace, which only that cluster's etcd
// holds, so the clone gets a front door of its own, and deleting it leaves the first
// cluster's port and floating IP.
func TestClonedClusterOnTheSameNetworkGetsItsOwnDoor(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id, door := firstCluster(t, ctx, e)
	checkCloneGetsItsOwnDoor(t, ctx, e, cloneCluster(t, ctx, e, id), id, door)
}

// TestClonedClusterOnAnotherNetworkGetsItsOwnDoor: a clone of the first cluster
// (cloneCluster) whose Infrastructure and nodes are on a network of their own, and a first
// cluster's VIP port without the namespace tag (a port from before that tag): only the
// network tells that port from the clone's lost front door. The clone leaves it alone and
// gets a front door of its own in its network; deleting the clone leaves the first
// cluster's port and floating IP.
func TestClonedClusterOnAnotherNetworkGetsItsOwnDoor(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id, door := firstCluster(t, ctx, e)
	port, err := e.neutron.GetPort(ctx, door.portID)
	if err != nil {
		t.Fatal(err)
	}
	tags := slices.DeleteFunc(slices.Clone(port.Tags), func(tag string) bool { return strings.HasPrefix(tag, openstack.NamespaceTagPrefix) })
	if len(tags) == len(port.Tags) {
		t.Fatalf("the first cluster's VIP port has no namespace tag: %v", port.Tags)
	}
	if err := e.neutron.ReplacePortTags(ctx, door.portID, tags); err != nil {
		t.Fatal(err)
	}
	// Read back: Neutron decides the order in which it returns the tags.
	if port, err = e.neutron.GetPort(ctx, door.portID); err != nil {
		t.Fatal(err)
	}
	door.tags = port.Tags

	other := *e
	var cidr string
	other.os.NetworkID, other.os.SubnetID, cidr = routedNetwork(t, ctx, e)
	e2 := cloneCluster(t, ctx, &other, id, func(o *framework.BootstrapOptions) { o.SubnetCIDR = cidr })
	checkCloneGetsItsOwnDoor(t, ctx, e, e2, id, door)
}

// routedNetwork creates a network of the project with an IPv4 subnet behind the project's
// router (so that floating IPs reach it), and removes them when the test ends, with any
// port and floating IP left in the network, which it reports.
func routedNetwork(t *testing.T, ctx context.Context, e *sharedEnv) (networkID, subnetID, cidr string) {
	t.Helper()
	c := e.neutron.ServiceClient()
	cidr = fmt.Sprintf("198.19.%d.0/24", rand.IntnRange(100, 200))
	name := "clone-" + rand.String(5)
	nw, err := networks.Create(ctx, c, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("creating network %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := networks.Delete(context.Background(), c, nw.ID).ExtractErr(); err != nil {
			t.Errorf("deleting network %s: %v", name, err)
		}
	})
	sub, err := subnets.Create(ctx, c, subnets.CreateOpts{NetworkID: nw.ID, Name: name, IPVersion: 4, CIDR: cidr}).Extract()
	if err != nil {
		t.Fatalf("creating the subnet %s of %s: %v", cidr, name, err)
	}
	if _, err := routers.AddInterface(ctx, c, e.os.RouterID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract(); err != nil {
		t.Fatalf("adding %s to the router: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := routers.RemoveInterface(context.Background(), c, e.os.RouterID, routers.RemoveInterfaceOpts{SubnetID: sub.ID}).Extract(); err != nil {
			t.Errorf("removing %s from the router: %v", name, err)
		}
	})
	// Runs first: a port or floating IP left here (a failed deletion) would keep the router
	// interface and the network.
	t.Cleanup(func() {
		ctx := context.Background()
		left, err := e.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: nw.ID})
		if err != nil {
			t.Errorf("listing the ports of %s: %v", name, err)
			return
		}
		var stray []ports.Port
		for _, p := range left {
			if strings.HasPrefix(p.DeviceOwner, "network:") { // the router's interface, DHCP
				continue
			}
			t.Errorf("port %s (%s) left in %s; deleting it and its floating IPs", p.ID, p.Name, name)
			stray = append(stray, p)
		}
		deletePortsWithFloatingIPs(ctx, e, stray)
	})
	return nw.ID, sub.ID, cidr
}

// lostFrontDoor creates an exposure of the cluster, waits until it Succeeded under a
// controller of its own, and then loses the object: its finalizer is removed and it is
// deleted, its status with it, while its VIP port and floating IP stay in Neutron.
func lostFrontDoor(t *testing.T, ctx context.Context, e *sharedEnv, id string, nodes []nodeFixture) (*extensionsv1alpha1.SelfHostedShootExposure, frontDoorOf) {
	t.Helper()
	first := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, first, id)
	var door frontDoorOf
	t.Run("init", func(st *testing.T) {
		// This controller stops with the subtest, before the object is lost.
		startController(st, e)
		first = waitFor(st, ctx, e, first, "the first exposure", succeeded)
		door = readFrontDoor(st, ctx, e, first)
	})
	if t.Failed() {
		t.FailNow()
	}
	lost := first.DeepCopy()
	patch := client.MergeFrom(lost.DeepCopy())
	lost.Finalizers = nil
	if err := e.cp.Client.Patch(ctx, lost, patch); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Client.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(ctx, e, lost); err != nil {
		t.Fatal(err)
	}
	return first, door
}

// TestLostFrontDoorTakenOverOnce: two exposures created at the same instant for a cluster
// whose exposure was lost, reconciled by five workers, both find the lost front door; the
// claims run one after the other, and the second sees through the API that the first
// has taken the door over, although the controller's cache shows it only a second later:
// one adopts it, the other is refused, and deleting the refused one leaves the door. The
// API server answers lists of exposures half a second late, so that claims that did not
// wait for each other would both look before either recorded its claim.
func TestLostFrontDoorTakenOverOnce(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	_, door := lostFrontDoor(t, ctx, e, id, nodes)

	startController(t, e, func(s *controllerSetup) {
		s.workers, s.exposureWatchLag, s.exposureListLag = 5, time.Second, 500*time.Millisecond
	})
	won, refused := createTwins(t, ctx, e, id, nodes)
	if won.Status.Ingress[0].IP != door.fip {
		t.Errorf("%s publishes %v, want the lost front door %s", won.Name, won.Status.Ingress, door.fip)
	}
	if st := providerStatus(t, won); st.PortID != door.portID {
		t.Errorf("%s recorded the VIP port %s, want the lost one %s", won.Name, st.PortID, door.portID)
	}
	checkOneDoor(t, ctx, e, id, won, refused)
	deleteAndWait(t, ctx, e, refused)
	checkFrontDoorIntact(t, ctx, e, door, "after deleting the refused exposure")
}

// TestRecreatedExposureAdoptsItsFrontDoor: the exposure object is lost (finalizer removed,
// deleted) and created again, as gardenadm init does, with a new UID and no status. The
// new object takes over the same port, floating IP and addresses; no second front door is
// created. A second live exposure of the cluster is still refused and touches nothing, and
// deleting the re-created object leaves nothing behind.
func TestRecreatedExposureAdoptsItsFrontDoor(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)

	first, door := lostFrontDoor(t, ctx, e, id, nodes)

	startController(t, e)
	again := newExposure(exposureOptions{name: id, nodes: nodes})
	if err := e.cp.Client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	again = waitFor(t, ctx, e, again, "the re-created exposure", succeeded)
	if again.UID == first.UID {
		t.Fatalf("the re-created exposure has the old UID %s", again.UID)
	}
	if again.Status.Ingress[0].IP != door.fip {
		t.Errorf("the re-created exposure publishes %v, want the same front door %s", again.Status.Ingress, door.fip)
	}
	st := providerStatus(t, again)
	if st.PortID != door.portID || st.VIPAddress != door.vip || st.FloatingIPID != door.fipID {
		t.Errorf("the re-created exposure recorded port %s VIP %s floating IP %s, want %s %s %s", st.PortID, st.VIPAddress, st.FloatingIPID, door.portID, door.vip, door.fipID)
	}
	if tagged := taggedPorts(t, ctx, e, id); len(tagged) != 1 {
		t.Errorf("Neutron has %d VIP ports of the cluster, want 1", len(tagged))
	}
	if fips := clusterFloatingIPs(t, ctx, e, id); len(fips) != 1 {
		t.Errorf("Neutron has %d floating IPs of the cluster (%v), want 1", len(fips), fips)
	}
	checkFrontDoorIntact(t, ctx, e, door, "after the re-creation")

	// The other side: a second live exposure of the cluster is still refused.
	second, refused := secondExposure(t, ctx, e, id, nodes)
	t.Logf("lastError: %s", refused.Status.LastError.Description)
	if !strings.Contains(refused.Status.LastError.Description, ns+"/"+again.Name) {
		t.Errorf("lastError %q does not name the live exposure %s/%s", refused.Status.LastError.Description, ns, again.Name)
	}
	if st := providerStatus(t, refused); st.PortID != "" || st.FloatingIPID != "" || len(refused.Status.Ingress) > 0 {
		t.Errorf("the refused exposure recorded port %q, floating IP %q, ingress %v", st.PortID, st.FloatingIPID, refused.Status.Ingress)
	}
	deleteAndWait(t, ctx, e, second)
	checkFrontDoorIntact(t, ctx, e, door, "after deleting the refused exposure")

	// Destroy: nothing of the front door is left.
	deleteAndWait(t, ctx, e, again)
	if left := taggedPorts(t, ctx, e, id); len(left) > 0 {
		t.Errorf("after the deletion Neutron still has %d VIP ports of the cluster", len(left))
	}
	if fips := clusterFloatingIPs(t, ctx, e, id); len(fips) > 0 {
		t.Errorf("after the deletion Neutron still has the floating IPs %v of the cluster", fips)
	}
	if hasVIPPair(t, ctx, e, nodes[0].port, door.vip) {
		t.Errorf("after the deletion node port %s still carries the VIP %s", nodes[0].port, door.vip)
	}
}

// clusterFloatingIPs returns the addresses of the floating IPs whose description names the
// cluster's identity.
func clusterFloatingIPs(t *testing.T, ctx context.Context, e *sharedEnv, identity string) []string {
	t.Helper()
	all, err := e.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if strings.Contains(f.Description, "cluster "+identity+",") || strings.Contains(f.Description, "cluster "+identity+" ") {
			out = append(out, f.FloatingIP)
		}
	}
	return out
}
