// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// demo is one run: what it started, so that down stops exactly that.
type demo struct {
	opts *options
	out  *progress
	// log receives the cluster's and the harness's logs (file demo-debug.log).
	log     logr.Logger
	logFile *os.File

	osEnv framework.OpenStackEnv
	// ports maps a node's name to the Neutron machine port that hack/openstack.sh
	// provisioned for its IP.
	ports map[string]string

	cluster *nodes.Cluster
	ext     *extension.Extension
	// dp is hack/dataplane.sh's dataplane with --front-door; outside is the client in its
	// external namespace, whose only way in is the floating IP.
	dp           *dataplane.Env
	outside      *netns.Client
	closeOutside func()
	// created says that the exposure was created, so that down deletes it.
	created bool
	status  *v1alpha1.ExposureStatus
	// dns is the DNS value of the shoot's kube-apiserver domain that gardenadm init
	// computed from status.ingress, once.
	dns string
}

func newDemo(opts *options) (*demo, error) {
	if err := os.MkdirAll(opts.stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	f, err := os.Create(filepath.Join(opts.stateDir, "demo-debug.log"))
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(f))
	// controller-runtime and client-go log through these; without them controller-runtime
	// complains on stderr after 30s.
	ctrllog.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))
	return &demo{opts: opts, out: newProgress(os.Stdout), log: log, logFile: f}, nil
}

// close closes the log file; call it last.
func (d *demo) close() {
	_ = d.logFile.Close()
}

// up brings everything up, shows it and performs the failover. On error, what was
// started stays recorded in d for down.
func (d *demo) up(ctx context.Context) error {
	d.out.Printf("gardener-extension-kube-vip demo; logs, env.sh and the cluster's state in %s", d.opts.stateDir)

	d.out.Step(1, "Local OpenStack: Keystone + Neutron (hack/openstack.sh)")
	if err := d.openStack(ctx); err != nil {
		return err
	}

	d.out.Step(2, "The self-hosted shoot: 3 control-plane nodes, each a network namespace with containerd, a kubelet, etcd and kube-apiserver on 443 (gardenadm's layout)")
	if err := d.startCluster(ctx); err != nil {
		return err
	}

	d.out.Step(3, "The extension as an operator installs it from the release artifacts (make release-artifacts): the Gardener objects gardenadm creates, then the chart archive")
	if err := d.install(ctx); err != nil {
		return err
	}

	d.out.Step(4, "gardenadm init's step with Gardener v1.150.0's code: SelfHostedShootExposure kube-system/"+extension.ExposureName+", the DNS value")
	if err := d.initExposure(ctx); err != nil {
		return err
	}
	if err := d.showExposure(ctx); err != nil {
		return err
	}
	if err := d.showAgents(ctx); err != nil {
		return err
	}

	d.out.Step(5, "The API through the VIP, from the client namespace, and through the front door")
	if err := d.proveAPI(ctx); err != nil {
		return err
	}

	d.out.Step(6, "Live failover: the leader's agent pod is deleted while a prober polls /readyz through the front door (the VIP without --front-door)")
	if err := d.failover(ctx); err != nil {
		return err
	}

	d.out.Step(7, "Look around")
	if err := d.writeEnv(); err != nil {
		return err
	}
	d.lookAround()
	d.out.Raw(fmt.Sprintf("READY: the demo runs in the background (pid %d); stop it and everything else with: make demo-down", os.Getpid()))
	return nil
}

// openStack loads and checks the local OpenStack and the machine ports it provisioned.
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
	d.out.Printf("node subnet 198.18.0.0/24 in network %s, floating IPs from %q (198.19.0.0/24)", env.NetworkID, env.ExternalNetworkName)
	for i, id := range env.NodePortIDs {
		d.out.Printf("machine port %s  fixed IP %s  (device_owner compute:nova)", id, env.NodeIPs[i])
	}
	return nil
}

// startCluster brings the real-node cluster up and matches its nodes with the machine
// ports.
func (d *demo) startCluster(ctx context.Context) error {
	dir := d.clusterDir()
	// State of an earlier run is of no use (new CA, new cluster); its mounts went with it.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	opts := nodes.Options{Dir: dir, Prefix: d.opts.prefix, ImageVersion: "demo", Log: d.log.WithName("nodes"), APIServerPort: apiServerPort}
	if d.opts.frontDoor {
		dp, err := dataplane.LoadEnv(ctx)
		if err != nil {
			return err
		}
		d.dp = &dp
		opts.NIC = dp.NIC(d.osEnv.NodePortIDs)
		d.out.Printf("each node's NIC is its Neutron machine port, plugged as Nova plugs a VM (port security on, bridge %s of the linuxbridge agent)", dp.NodeBridge)
	}
	d.out.Printf("building the cluster's images (sandbox; controller and agent for the other tiers) with go-containerregistry, starting the namespaces, containerd, kubelets ...")
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	c, err := nodes.New(startCtx, opts)
	if c != nil {
		d.cluster = c
	}
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	var phases []string
	for _, p := range c.BringUp {
		phases = append(phases, fmt.Sprintf("%s %s", p.Name, p.Took.Round(100*time.Millisecond)))
	}
	d.out.Printf("up: %s", strings.Join(phases, ", "))
	d.ports = map[string]string{}
	for _, n := range c.Nodes() {
		i := slices.Index(d.osEnv.NodeIPs, n.IP().String())
		if i < 0 {
			return fmt.Errorf("%s has %s, which no Neutron machine port has (%v)", n.Name(), n.IP(), d.osEnv.NodeIPs)
		}
		d.ports[n.Name()] = d.osEnv.NodePortIDs[i]
		d.out.Printf("Node %s = namespace %-20s %s  MAC %s  machine port %s", n.Name(), n.Namespace(), n.IP(), n.MAC(), d.ports[n.Name()])
	}
	d.out.Printf("client     = namespace %-20s %s (on the nodes' LAN)", c.Net().Client().Namespace(), c.Net().Client().IP())
	if d.dp != nil {
		if d.outside, d.closeOutside, err = c.Net().ClientIn(d.dp.ClientNS); err != nil {
			return fmt.Errorf("the external client: %w", err)
		}
		d.out.Printf("outside    = namespace %-20s %s (the external network: no route to the nodes, only floating IPs)", d.dp.ClientNS, d.dp.ClientIP)
	}
	return d.kubectl(ctx, "get", "nodes", "-o", "wide")
}

// apiServerPort is gardenadm's layout: every node's kube-apiserver in the host network on
// 443, the exposure's spec.port.
const apiServerPort = 443

// clusterDir holds the cluster's state and logs. Its name, with the prefix, also names the
// nodes' cgroups, so that two runs with different prefixes do not share them.
func (d *demo) clusterDir() string {
	return filepath.Join(d.opts.stateDir, d.opts.prefix+"cluster")
}

// kubectl runs kubectl with the admin kubeconfig in the first node's namespace and prints
// its output.
func (d *demo) kubectl(ctx context.Context, args ...string) error {
	n := d.cluster.Nodes()[0]
	out, err := n.Run(ctx, filepath.Join(d.cluster.BinDir(), "kubectl"), append([]string{"--kubeconfig", n.Kubeconfig()}, args...)...)
	if err != nil {
		return err
	}
	d.out.Printf("$ kubectl %s", strings.Join(args, " "))
	d.out.Block(out)
	return nil
}

// install creates the Gardener objects and installs the chart, and waits for the
// controller pod.
func (d *demo) install(ctx context.Context) error {
	release, err := extension.LoadRelease(d.opts.release)
	if err != nil {
		return err
	}
	for _, img := range release.Images {
		d.out.Printf("release image %s@%s (OCI layout %s), imported into each node's containerd", img.Ref, img.Digest, img.Layout)
	}
	d.out.Printf("release chart %s, rendered with its own image defaults", release.Chart)
	ext, err := extension.Install(ctx, extension.Options{Cluster: d.cluster, OpenStack: d.osEnv, TechnicalID: d.opts.technicalID, Log: d.log.WithName("gardenadm"), Release: release, Routed: d.opts.frontDoor})
	if ext != nil {
		d.ext = ext
	}
	if err != nil {
		return fmt.Errorf("installing the extension: %w", err)
	}
	d.out.Printf("Gardener CRDs; in kube-system: Cluster (technical ID %s; the Shoot's exposure providerConfig names the VIP and the agents' interface), Infrastructure (network, router, floating pool %q), Secret %s (application credential)",
		d.opts.technicalID, d.osEnv.ExternalNetworkName, framework.CloudProviderSecretName)
	d.out.Printf("chart archive rendered with gardener's chartrenderer (self-hosted values, no image values) and applied: the controller as Deployment %s/%s with the chart's RBAC",
		extension.ReleaseNamespace, extension.ReleaseName)
	var d0 *appsv1.Deployment
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := d.cluster.Client().AppsV1().Deployments(extension.ReleaseNamespace).Get(ctx, extension.ReleaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		d0 = got
		return got.Status.ReadyReplicas == 1, nil
	})
	if err != nil {
		return fmt.Errorf("the controller pod did not become Ready: %w", err)
	}
	d.out.Printf("controller Ready (image %s)", d0.Spec.Template.Spec.Containers[0].Image)
	return d.kubectl(ctx, "-n", extension.ReleaseNamespace, "get", "pods", "-o",
		"custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,IMAGE:.status.containerStatuses[0].image,IMAGE-ID:.status.containerStatuses[0].imageID")
}

// down stops what up started, newest first: the exposure (through the controller, which
// releases the Neutron resources), the extension's forwarder, the cluster.
func (d *demo) down(ctx context.Context) error {
	d.out.Step(8, "Teardown")
	var errs []error
	if d.created && d.ext != nil {
		if err := d.deleteExposure(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if d.ext != nil {
		if err := d.ext.Teardown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if d.closeOutside != nil {
		d.closeOutside()
	}
	if d.cluster != nil {
		if err := d.cluster.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the cluster: %w", err))
		}
		if left := d.cluster.Leftovers(); len(left) > 0 {
			errs = append(errs, fmt.Errorf("left behind: %q", left))
		} else {
			d.out.Printf("kubelets, containerd, containers, etcd, kube-apiservers, namespaces, mounts, cgroups and the kubelets' iptables chains removed")
		}
		// Keep the logs for a look afterwards; drop the images and containerd's content.
		dir := d.clusterDir()
		_ = os.RemoveAll(filepath.Join(dir, "images"))
		for _, n := range d.cluster.Nodes() {
			_ = os.RemoveAll(filepath.Join(dir, n.Name(), "root"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.out.Printf("demo stopped")
	return nil
}
