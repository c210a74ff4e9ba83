// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// demo is one run: what it started, so that down stops exactly that.
type demo struct {
	opts *options
	out  *progress
	// log receives the controller's and the harness's logs (file controller.log).
	log     logr.Logger
	logFile *os.File

	osEnv   framework.OpenStackEnv
	neutron *openstack.Network

	h      *netns.Harness
	nodes  []shootNode
	scheme *runtime.Scheme
	// c talks to the shoot's kube-apiserver on node1 (no cache).
	c client.Client
	// restConfig is c's config; the manager uses it too.
	restConfig *rest.Config

	controller *controllerRun
	kubelet    *kubelet
	exposure   *exposureRun
}

// shootNode is a control-plane Node of the shoot and the namespace that plays its machine.
type shootNode struct {
	// name is the Node's name (node-0, node-1, ...) and the agent's identity in the Lease.
	name string
	ns   *netns.Node
	// portID is the Neutron port that hack/openstack.sh provisioned for this node's IP.
	portID string
	// kubeconfig is the admin kubeconfig for the node's own kube-apiserver (127.0.0.1:6443).
	kubeconfig string
}

func newDemo(opts *options) (*demo, error) {
	if err := os.MkdirAll(opts.stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	logPath := filepath.Join(opts.stateDir, "controller.log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(f))
	// controller-runtime and client-go log through these; without them controller-runtime
	// complains on stderr after 30s.
	ctrllog.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))
	return &demo{
		opts:    opts,
		out:     newProgress(os.Stdout),
		log:     log,
		logFile: f,
	}, nil
}

// close closes the log file; call it last.
func (d *demo) close() {
	_ = d.logFile.Close()
}

// up brings everything up, shows it and performs the failover. On error, what was
// started stays recorded in d for down.
func (d *demo) up(ctx context.Context) error {
	d.out.Printf("gardener-extension-kube-vip demo; logs and kubeconfigs in %s", d.opts.stateDir)

	d.out.Step(1, "Local OpenStack: Keystone + Neutron (hack/openstack.sh)")
	if err := d.openStack(ctx); err != nil {
		return err
	}

	d.out.Step(2, "The self-hosted shoot: 3 control-plane node namespaces with etcd + kube-apiserver, and a client namespace")
	if err := d.startShoot(ctx); err != nil {
		return err
	}
	if err := d.bootstrapShoot(ctx); err != nil {
		return err
	}

	d.out.Step(3, "Controllers (SelfHostedShootExposure + node tracking) in this process, and the kubelet stand-in")
	if err := d.startController(ctx); err != nil {
		return err
	}
	d.startKubelet(ctx)

	d.out.Step(4, "SelfHostedShootExposure kube-system/kube-apiserver")
	if err := d.createExposure(ctx); err != nil {
		return err
	}
	if err := d.showExposure(ctx); err != nil {
		return err
	}

	d.out.Step(5, "The API through the VIP, from the client namespace")
	if err := d.proveAPI(ctx); err != nil {
		return err
	}

	d.out.Step(6, "Live failover: SIGTERM to the leader's agent while a prober polls https://VIP:6443/readyz")
	if err := d.failover(ctx); err != nil {
		return err
	}

	d.out.Step(7, "Look around")
	d.lookAround()
	d.out.Raw(fmt.Sprintf("READY: the demo runs in the background (pid %d); stop it and everything else with: make demo-down", os.Getpid()))
	return nil
}

// openStack loads and checks the local OpenStack and the node ports it provisioned.
func (d *demo) openStack(ctx context.Context) error {
	env, err := framework.LoadOpenStackEnv(d.opts.openstackEnv)
	if err != nil {
		return fmt.Errorf("%w (run hack/openstack.sh up)", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := env.Ping(pingCtx); err != nil {
		return fmt.Errorf("local OpenStack does not answer (%w); run hack/openstack.sh up", err)
	}
	d.osEnv = env
	d.out.Printf("Keystone %s, Neutron %s, project %s, region %s", env.AuthURL, env.NeutronURL, env.ProjectName, env.Region)

	// The demo's own Neutron client, to read back what the controller did; its requests
	// are not counted in the controller's metrics.
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	d.neutron, err = factory.Network(ctx, openstack.AuthConfig{
		Credentials: &openstack.Credentials{
			DomainName:                  env.DomainName,
			TenantName:                  env.ProjectName,
			ApplicationCredentialID:     env.ApplicationCredentialID,
			ApplicationCredentialSecret: env.ApplicationCredentialSecret,
		},
		AuthURL: env.AuthURL,
		Region:  env.Region,
	})
	if err != nil {
		return fmt.Errorf("authenticating at Keystone: %w", err)
	}
	d.out.Printf("node subnet 198.18.0.0/24 in network %s, floating IPs from %q (198.19.0.0/24)", env.NetworkID, env.ExternalNetworkName)
	for i, id := range env.NodePortIDs {
		d.out.Printf("machine port %s  fixed IP %s  (device_owner compute:nova)", id, env.NodeIPs[i])
	}
	return nil
}

// startShoot starts the harness and matches its nodes with the Neutron node ports.
func (d *demo) startShoot(ctx context.Context) error {
	vip := netip.MustParseAddr(d.opts.vip)
	harnessDir := filepath.Join(d.opts.stateDir, "shoot")
	// Certificates and etcd data of an earlier run are of no use (new CA, new cluster).
	if err := os.RemoveAll(harnessDir); err != nil {
		return fmt.Errorf("removing %s: %w", harnessDir, err)
	}
	d.out.Printf("starting 3 etcd members and 3 kube-apiservers (prefix %s, VIP %s) ...", d.opts.prefix, vip)
	startCtx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	h, err := netns.New(startCtx, netns.Options{
		Prefix:       d.opts.prefix,
		Nodes:        len(d.osEnv.NodeIPs),
		VIP:          vip,
		ControlPlane: true,
		BinDir:       d.opts.kubeBinDir,
		Dir:          harnessDir,
		Log:          d.log.WithName("harness"),
	})
	if h != nil {
		d.h = h
	}
	if err != nil {
		return fmt.Errorf("starting the shoot's namespaces: %w", err)
	}
	if !h.Subnet().Contains(vip) {
		return fmt.Errorf("VIP %s is not in the node subnet %s", vip, h.Subnet())
	}
	for i, n := range h.Nodes() {
		want := netip.MustParseAddr(d.osEnv.NodeIPs[i])
		if n.IP() != want {
			return fmt.Errorf("%s has %s but Neutron's machine port %d has %s", n.Name(), n.IP(), i, want)
		}
		d.nodes = append(d.nodes, shootNode{name: fmt.Sprintf("node-%d", i), ns: n, portID: d.osEnv.NodePortIDs[i], kubeconfig: n.Kubeconfig()})
		d.out.Printf("Node %s = namespace %-22s %s  MAC %s  kube-apiserver https://%s:6443", d.nodes[i].name, n.Namespace(), n.IP(), n.MAC(), n.IP())
	}
	d.out.Printf("client      = namespace %-22s %s", h.Client().Namespace(), h.Client().IP())
	return nil
}

// nodeByNamespace maps a harness node to the shoot's Node.
func (d *demo) nodeByNamespace(n *netns.Node) *shootNode {
	for i := range d.nodes {
		if d.nodes[i].ns == n {
			return &d.nodes[i]
		}
	}
	return nil
}

// nodeByName returns the shoot's Node with that name.
func (d *demo) nodeByName(name string) *shootNode {
	for i := range d.nodes {
		if d.nodes[i].name == name {
			return &d.nodes[i]
		}
	}
	return nil
}

// holders names the Nodes whose namespace has the VIP now.
func (d *demo) holders() ([]string, error) {
	hs, err := d.h.Holders()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range hs {
		if sn := d.nodeByNamespace(n); sn != nil {
			names = append(names, sn.name)
		}
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

// down stops what up started, newest first: the exposure (through the controller, which
// releases the Neutron resources), the agents, the controller, the namespaces.
func (d *demo) down(ctx context.Context) error {
	d.out.Step(8, "Teardown")
	var errs []error
	if d.exposure != nil {
		if err := d.deleteExposure(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if d.kubelet != nil {
		d.kubelet.stop()
		d.out.Printf("kubelet stand-in stopped (no agent runs)")
	}
	if d.controller != nil {
		if err := d.controller.stop(); err != nil {
			errs = append(errs, err)
		}
		d.out.Printf("controllers stopped")
	}
	if d.h != nil {
		if err := d.h.Close(); err != nil {
			errs = append(errs, fmt.Errorf("removing the namespaces: %w", err))
		}
		// Keep the logs and certificates for a look afterwards; drop the etcd data.
		for _, n := range d.h.Nodes() {
			_ = os.RemoveAll(filepath.Join(d.h.Dir(), n.Name()+"-etcd"))
		}
		if left := leftoverNamespaces(d.h.ID()); len(left) > 0 {
			errs = append(errs, fmt.Errorf("namespaces left: %v", left))
		} else {
			d.out.Printf("etcd members, kube-apiservers and namespaces %s-* removed (logs stay in %s)", d.h.ID(), d.h.Dir())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.out.Printf("demo stopped")
	return nil
}

// leftoverNamespaces lists the namespaces whose name starts with id.
func leftoverNamespaces(id string) []string {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), id+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}
