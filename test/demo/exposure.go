// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// exposureName is the name of the demo's SelfHostedShootExposure.
const exposureName = "kube-apiserver"

// exposureRun is the exposure the demo created and the last status it saw.
type exposureRun struct {
	key    client.ObjectKey
	status *v1alpha1.ExposureStatus
}

// createExposure creates the SelfHostedShootExposure as the gardenlet would, with the
// VIP fixed by providerConfig (the harness's certificates carry it), and waits until the
// controller reports success.
func (d *demo) createExposure(ctx context.Context) error {
	providerConfig := fmt.Sprintf(`{"apiVersion":%q,"kind":"ExposureConfig","vipAddress":%q}`, v1alpha1.SchemeGroupVersion.String(), d.opts.vip)
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: exposureName, Namespace: framework.Namespace},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type:           exposure.DefaultType,
				ProviderConfig: &runtime.RawExtension{Raw: []byte(providerConfig)},
			},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: framework.Namespace, Name: framework.CloudProviderSecretName},
			Port:           6443,
		},
	}
	for _, n := range d.nodes {
		exp.Spec.Endpoints = append(exp.Spec.Endpoints, extensionsv1alpha1.ControlPlaneEndpoint{
			NodeName:  n.name,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ns.IP().String()}},
		})
	}
	if err := d.c.Create(ctx, exp); err != nil {
		return fmt.Errorf("creating the SelfHostedShootExposure: %w", err)
	}
	d.exposure = &exposureRun{key: client.ObjectKeyFromObject(exp)}
	d.out.Printf("created: type %s, port 6443, credentialsRef Secret kube-system/%s, providerConfig %s", exposure.DefaultType, framework.CloudProviderSecretName, providerConfig)
	d.out.Printf("everything else comes from the Infrastructure's status (network, subnet, floating pool)")

	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	for {
		current := &extensionsv1alpha1.SelfHostedShootExposure{}
		if err := d.c.Get(waitCtx, d.exposure.key, current); err == nil {
			if lo := current.Status.LastOperation; lo != nil {
				line := fmt.Sprintf("lastOperation %s %s (%d%%): %s", lo.Type, lo.State, lo.Progress, firstLine(lo.Description))
				if line != last {
					d.out.Printf("%s", line)
					last = line
				}
				if lo.State == gardencorev1beta1.LastOperationStateSucceeded && current.Status.ObservedGeneration == current.Generation && len(current.Status.Ingress) > 0 {
					status, err := exposure.DecodeStatus(current)
					if err != nil {
						return err
					}
					d.exposure.status = status
					d.out.Printf("reconciled in %s", time.Since(start).Round(100*time.Millisecond))
					return nil
				}
			}
		}
		select {
		case <-waitCtx.Done():
			return fmt.Errorf("the exposure did not succeed (last: %s): %w; see %s/controller.log", last, waitCtx.Err(), d.opts.stateDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	return line
}

// showExposure prints status.ingress, the VIP, the agents' leader and what Neutron holds.
func (d *demo) showExposure(ctx context.Context) error {
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := d.c.Get(ctx, d.exposure.key, current); err != nil {
		return fmt.Errorf("reading the exposure: %w", err)
	}
	status, err := exposure.DecodeStatus(current)
	if err != nil {
		return err
	}
	d.exposure.status = status
	for _, in := range current.Status.Ingress {
		d.out.Printf("status.ingress: ip=%s hostname=%q  <- the floating IP, the shoot's public kube-apiserver address", in.IP, in.Hostname)
	}
	d.out.Printf("status.providerStatus: VIP %s on Neutron port %s, floating IP %s (%s), %d node ports",
		status.VIPAddress, status.PortID, status.FloatingIPAddress, status.FloatingIPID, len(status.NodePorts))

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	holder, err := d.waitLeader(waitCtx)
	if err != nil {
		return err
	}
	hn := d.nodeByName(holder)
	d.out.Printf("Lease kube-system/%s held by %s; the VIP %s sits on %s of %s (namespace %s) and nowhere else",
		agentrollout.LeaseName, holder, status.VIPAddress, hn.ns.Interface(), holder, hn.ns.Namespace())

	d.out.Printf("read back from Neutron:")
	vipPort, err := d.neutron.GetPort(ctx, status.PortID)
	if err != nil {
		return err
	}
	d.out.Printf("  VIP port %s  %q  fixed IP %s  device_owner %q  (unbound: nothing uses it but the reservation)",
		vipPort.ID, vipPort.Name, openstack.PortAddress(vipPort, status.SubnetID), vipPort.DeviceOwner)
	fips, err := d.neutron.FloatingIPsOfPort(ctx, status.PortID)
	if err != nil {
		return err
	}
	for _, f := range fips {
		d.out.Printf("  floating IP %s -> fixed IP %s of port %s (status %s)", f.FloatingIP, f.FixedIP, f.PortID, f.Status)
	}
	for _, n := range d.nodes {
		p, err := d.neutron.GetPort(ctx, n.portID)
		if err != nil {
			return err
		}
		var pairs []string
		for _, pair := range p.AllowedAddressPairs {
			pairs = append(pairs, pair.IPAddress)
		}
		d.out.Printf("  %s's port %s  fixed IP %s  allowed_address_pairs %v", n.name, p.ID, openstack.PortAddress(p, d.osEnv.SubnetID), pairs)
	}
	return nil
}

// leaseHolder reads the holder of the agents' Lease ("" when there is no Lease or holder).
func (d *demo) leaseHolder(ctx context.Context) (string, error) {
	lease := &coordinationv1.Lease{}
	err := d.c.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.LeaseName}, lease)
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
// Neutron resources and removed its finalizer. If that fails, it releases what the last
// status recorded itself, so that nothing stays in Neutron.
func (d *demo) deleteExposure(ctx context.Context) error {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: d.exposure.key.Name, Namespace: d.exposure.key.Namespace}}
	d.out.Printf("deleting SelfHostedShootExposure %s; the controller removes the DaemonSet, waits for the agents, then releases the floating IP, the VIP port and the VIP pairs", d.exposure.key)
	start := time.Now()
	err := d.c.Delete(ctx, exp)
	if err == nil || apierrors.IsNotFound(err) {
		err = d.waitExposureGone(ctx)
	}
	if err == nil {
		d.out.Printf("exposure gone after %s", time.Since(start).Round(100*time.Millisecond))
		return d.checkNeutronClean(ctx)
	}
	d.out.Printf("the controller did not finish the deletion (%v); releasing the recorded Neutron resources directly", err)
	return errors.Join(err, d.forceReleaseNeutron(ctx))
}

func (d *demo) waitExposureGone(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		current := &extensionsv1alpha1.SelfHostedShootExposure{}
		err := d.c.Get(waitCtx, d.exposure.key, current)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil && current.Status.LastOperation != nil {
			lo := current.Status.LastOperation
			line := fmt.Sprintf("lastOperation %s %s: %s", lo.Type, lo.State, firstLine(lo.Description))
			if line != last {
				d.out.Printf("%s", line)
				last = line
			}
		}
		select {
		case <-waitCtx.Done():
			return fmt.Errorf("exposure %s still exists: %w", d.exposure.key, waitCtx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkNeutronClean verifies that no port of the demo's cluster is left and no node port
// carries the VIP.
func (d *demo) checkNeutronClean(ctx context.Context) error {
	tagged, err := d.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(d.opts.technicalID)}})
	if err != nil {
		return err
	}
	var errs []error
	if len(tagged) > 0 {
		errs = append(errs, fmt.Errorf("%d Neutron ports tagged %s remain", len(tagged), openstack.ClusterTag(d.opts.technicalID)))
	}
	for _, n := range d.nodes {
		p, err := d.neutron.GetPort(ctx, n.portID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if openstack.HasPair(p, d.opts.vip) {
			errs = append(errs, fmt.Errorf("port %s of %s still allows %s", p.ID, n.name, d.opts.vip))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.out.Printf("Neutron checked: no port tagged %s, no node port allows %s", openstack.ClusterTag(d.opts.technicalID), d.opts.vip)
	return nil
}

// forceReleaseNeutron deletes the floating IP and the VIP port that the last status (or
// the cluster tag) names and removes the VIP pair from the node ports.
func (d *demo) forceReleaseNeutron(ctx context.Context) error {
	var errs []error
	tagged, err := d.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(d.opts.technicalID)}})
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range tagged {
		fips, err := d.neutron.FloatingIPsOfPort(ctx, p.ID)
		if err != nil {
			errs = append(errs, err)
		}
		for _, f := range fips {
			if err := d.neutron.DeleteFloatingIP(ctx, f.ID); err != nil && !openstack.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		if err := d.neutron.DeletePort(ctx, p.ID); err != nil && !openstack.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	for _, n := range d.nodes {
		p, err := d.neutron.GetPort(ctx, n.portID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := d.neutron.RemovePairFromPort(ctx, p, d.opts.vip); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("releasing Neutron resources: %w", err)
	}
	d.out.Printf("released %d tagged ports (with their floating IPs) and the VIP pairs", len(tagged))
	return nil
}
