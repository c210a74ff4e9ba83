// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// capNetAdminRaw is CAP_NET_ADMIN (12) | CAP_NET_RAW (13).
const capNetAdminRaw = 1<<12 | 1<<13

// initExposure runs gardenadm init's step with Gardener's code (framework.Gardenadm): the
// Ready control-plane Nodes become spec.endpoints, Gardener's component creates the
// exposure and waits until the controller reports success, and DNSValuesFromIngress
// computes the DNS value once. The demo prints the controller's operations meanwhile.
func (d *demo) initExposure(ctx context.Context) error {
	d.out.Printf("the VIP comes from the Shoot's exposure providerConfig (the nodes' serving certificates carry it); everything else from the Infrastructure's status (network, subnet, floating pool)")
	start := time.Now()
	type result struct {
		dns string
		err error
	}
	done := make(chan result, 1)
	d.created = true
	go func() {
		dns, err := d.ext.Init(ctx)
		done <- result{dns, err}
	}()
	var res result
	var lastOp gardencorev1beta1.LastOperation
	for waiting := true; waiting; {
		select {
		case res = <-done:
			waiting = false
		case <-time.After(200 * time.Millisecond):
		}
		current, err := d.ext.Exposure(ctx)
		if err != nil {
			continue
		}
		if lo := current.Status.LastOperation; lo != nil && (lo.State != lastOp.State || lo.Description != lastOp.Description) {
			d.out.Printf("lastOperation %s %s (%d%%): %s", lo.Type, lo.State, lo.Progress, firstLine(lo.Description))
			lastOp = *lo
		}
	}
	if res.err != nil {
		return fmt.Errorf("gardenadm init: %w; controller log:\n%s", res.err, d.ext.ControllerLog(ctx))
	}
	current, err := d.ext.Exposure(ctx)
	if err != nil {
		return err
	}
	if d.status, err = exposure.DecodeStatus(current); err != nil {
		return err
	}
	var endpoints []string
	for _, e := range current.Spec.Endpoints {
		endpoints = append(endpoints, e.NodeName)
	}
	d.out.Printf("Gardener's component created it: type %s, spec.port %d, spec.endpoints %v (the Ready control-plane Nodes), credentialsRef Secret %s/%s, no providerConfig",
		current.Spec.Type, current.Spec.Port, endpoints, current.Spec.CredentialsRef.Namespace, current.Spec.CredentialsRef.Name)
	d.out.Printf("Succeeded in %s: the controller saw a ready agent hold the Lease and VIP:%d accept a connection", time.Since(start).Round(100*time.Millisecond), current.Spec.Port)
	for _, in := range current.Status.Ingress {
		d.out.Printf("status.ingress: ip=%s hostname=%q  <- the floating IP", in.IP, in.Hostname)
	}
	d.dns = res.dns
	d.out.Printf("DNS value (DNSValuesFromIngress, computed once at init): %s  <- the shoot's kube-apiserver domain points here", d.dns)
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	return line
}

// showExposure prints the status, the VIP's holder and what Neutron holds.
func (d *demo) showExposure(ctx context.Context) error {
	status := d.status
	d.out.Printf("status.providerStatus: VIP %s on Neutron port %s, floating IP %s (%s), %d node ports",
		status.VIPAddress, status.PortID, status.FloatingIPAddress, status.FloatingIPID, len(status.NodePorts))
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	holder, err := d.waitLeader(waitCtx)
	if err != nil {
		return err
	}
	hn := d.cluster.Node(holder)
	d.out.Printf("Lease kube-system/%s held by %s; the VIP %s sits on %s of %s (namespace %s) and nowhere else",
		agentrollout.LeaseName, holder, status.VIPAddress, hn.Interface(), holder, hn.Namespace())

	neutron := d.ext.Neutron
	d.out.Printf("read back from Neutron:")
	vipPort, err := neutron.GetPort(ctx, status.PortID)
	if err != nil {
		return err
	}
	d.out.Printf("  VIP port %s  %q  fixed IP %s  device_owner %q  (unbound: nothing uses it but the reservation)",
		vipPort.ID, vipPort.Name, openstack.PortAddress(vipPort, status.SubnetID), vipPort.DeviceOwner)
	fips, err := neutron.FloatingIPsOfPort(ctx, status.PortID)
	if err != nil {
		return err
	}
	for _, f := range fips {
		d.out.Printf("  floating IP %s -> fixed IP %s of port %s (status %s)", f.FloatingIP, f.FixedIP, f.PortID, f.Status)
	}
	for _, n := range d.cluster.Nodes() {
		p, err := neutron.GetPort(ctx, d.ports[n.Name()])
		if err != nil {
			return err
		}
		var pairs []string
		for _, pair := range p.AllowedAddressPairs {
			pairs = append(pairs, pair.IPAddress)
		}
		d.out.Printf("  %s's port %s  fixed IP %s  allowed_address_pairs %v", n.Name(), p.ID, openstack.PortAddress(p, d.osEnv.SubnetID), pairs)
	}
	return nil
}

// showAgents shows the DaemonSet and, for each node, the agent process as the kernel
// sees it: its parent (the containerd shim) and its effective capabilities.
func (d *demo) showAgents(ctx context.Context) error {
	if err := d.ext.WaitAgentsReady(ctx, 3*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, d.ext.AgentsReport(ctx))
	}
	if err := d.kubectl(ctx, "-n", framework.Namespace, "get", "daemonset,pods", "-l", agentrollout.LabelAppName+"="+agentrollout.Name, "-o", "wide"); err != nil {
		return err
	}
	for _, n := range d.cluster.Nodes() {
		for _, name := range []string{"kube-vip-agent", extension.ReleaseName} {
			procs, err := n.Processes(name)
			if err != nil {
				return err
			}
			for _, p := range procs {
				parent, err := nodes.ReadProcStatus(p.PPID)
				if err != nil {
					return err
				}
				d.out.Printf("%s: %s pid %d, parent %s (pid %d), CapEff %#x%s, RSS %d MiB",
					n.Name(), name, p.PID, parent.Name, parent.PID, p.CapEff, capNote(p.CapEff), p.RSS>>20)
			}
		}
	}
	return nil
}

// capNote names the capability set when it is NET_ADMIN and NET_RAW.
func capNote(capEff uint64) string {
	if capEff == capNetAdminRaw {
		return " (NET_ADMIN+NET_RAW)"
	}
	return ""
}

// leaseHolder reads the holder of the agents' Lease ("" when there is no Lease or holder).
func (d *demo) leaseHolder(ctx context.Context) (string, error) {
	lease := &coordinationv1.Lease{}
	err := d.ext.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.LeaseName}, lease)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// holders names the nodes whose namespace has the VIP now.
func (d *demo) holders() ([]string, error) {
	hs, err := d.cluster.Net().Holders()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range hs {
		names = append(names, n.Name())
	}
	slices.Sort(names)
	return names, nil
}

func describeHolders(names []string) string {
	if len(names) == 0 {
		return "nobody"
	}
	return strings.Join(names, "+")
}

// waitLeader waits until exactly one node has the VIP and the Lease names it.
func (d *demo) waitLeader(ctx context.Context) (string, error) {
	var lastHolder string
	var lastVIP []string
	for {
		holder, err := d.leaseHolder(ctx)
		if err == nil {
			lastHolder = holder
		}
		if vip, err := d.holders(); err == nil {
			lastVIP = vip
			if len(vip) == 1 && vip[0] == holder {
				return holder, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no single leader: Lease holder %q, VIP on %s: %w", lastHolder, describeHolders(lastVIP), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// deleteExposure deletes the exposure and waits until the controller has released the
// Neutron resources and removed its finalizer; then it checks Neutron. If the controller
// does not finish, the VIP pairs it added are removed here (the tagged port and floating
// IP are released by the extension's Teardown).
func (d *demo) deleteExposure(ctx context.Context) error {
	d.out.Printf("deleting SelfHostedShootExposure kube-system/%s with Gardener's component (Destroy, WaitCleanup); the controller removes the DaemonSet, waits for the agents, then releases the floating IP, the VIP port and the VIP pairs", extension.ExposureName)
	start := time.Now()
	if err := d.ext.DeleteExposure(ctx, 2*time.Minute); err != nil {
		d.out.Printf("the controller did not finish the deletion (%v); removing the VIP pairs directly", err)
		return errors.Join(err, d.removePairs(ctx))
	}
	d.out.Printf("exposure gone after %s", time.Since(start).Round(100*time.Millisecond))
	return d.checkNeutronClean(ctx)
}

// vip is the exposure's VIP.
func (d *demo) vip() string { return d.cluster.Net().VIP().String() }

// checkNeutronClean verifies that no port of the demo's cluster is left and no node port
// carries the VIP.
func (d *demo) checkNeutronClean(ctx context.Context) error {
	tagged, err := d.ext.TaggedPorts(ctx)
	if err != nil {
		return err
	}
	var errs []error
	if len(tagged) > 0 {
		errs = append(errs, fmt.Errorf("%d Neutron ports tagged %s remain", len(tagged), openstack.ClusterTag(d.opts.technicalID)))
	}
	for name, id := range d.ports {
		p, err := d.ext.Neutron.GetPort(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if openstack.HasPair(p, d.vip()) {
			errs = append(errs, fmt.Errorf("port %s of %s still allows %s", p.ID, name, d.vip()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.out.Printf("Neutron checked: no port tagged %s, no node port allows %s", openstack.ClusterTag(d.opts.technicalID), d.vip())
	return nil
}

// removePairs removes the VIP pair from the node ports.
func (d *demo) removePairs(ctx context.Context) error {
	var errs []error
	for _, id := range d.ports {
		p, err := d.ext.Neutron.GetPort(ctx, id)
		if err == nil {
			_, err = d.ext.Neutron.RemovePairFromPort(ctx, p, d.vip())
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// agentPod is the name of the agent pod on the node.
func (d *demo) agentPod(ctx context.Context, node string) (string, error) {
	pod, err := d.ext.AgentPod(ctx, node)
	if err != nil {
		return "", err
	}
	return pod.Name, nil
}
