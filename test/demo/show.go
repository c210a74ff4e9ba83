// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// clientKubeconfig is the file name of the admin kubeconfig for the client namespace: its
// server is the floating IP (front door) or the VIP.
const clientKubeconfig = "client.kubeconfig"

// proveAPI calls the shoot's API from the client namespace, through the front door when
// there is one, else through the VIP on the LAN, and writes the client's kubeconfig.
func (d *demo) proveAPI(ctx context.Context) error {
	if d.outside != nil {
		return d.proveFrontDoor(ctx)
	}
	h := d.cluster.Net()
	cfg := h.Nodes()[0].RESTConfig()
	cfg.Host = "https://" + netip.AddrPortFrom(h.VIP(), apiServerPort).String()
	cfg.Dial = h.Client().DialContext
	if err := d.callAPI(ctx, cfg, fmt.Sprintf("%s (%s)", h.Client().Namespace(), h.Client().IP()), "GET"); err != nil {
		return err
	}
	neigh, ok, err := h.Client().Neighbor(h.VIP())
	if err == nil && ok {
		owner := "?"
		if n := h.NodeByMAC(neigh.MAC); n != nil {
			owner = n.Name()
		}
		d.out.Printf("the client's ARP entry: %s is at %s (%s's eth0), %s", h.VIP(), neigh.MAC, owner, neigh.State)
	}

	return d.writeClientKubeconfig(cfg.Host, "")
}

// writeClientKubeconfig writes the admin kubeconfig with the server (and the name the
// serving certificate is verified for), for a look from the client namespace.
func (d *demo) writeClientKubeconfig(server, serverName string) error {
	node := d.cluster.Net().Nodes()[0]
	kc, err := clientcmd.LoadFromFile(node.Kubeconfig())
	if err != nil {
		return fmt.Errorf("reading %s: %w", node.Kubeconfig(), err)
	}
	for _, c := range kc.Clusters {
		c.Server = server
		c.TLSServerName = serverName
	}
	if err := clientcmd.WriteToFile(*kc, filepath.Join(d.opts.stateDir, clientKubeconfig)); err != nil {
		return fmt.Errorf("writing the client's kubeconfig: %w", err)
	}
	return nil
}

// proveFrontDoor calls the API at the DNS value gardenadm computed (the floating IP) from the
// external client namespace,
// whose only way in is the Neutron router: /readyz and a list of the Nodes, with the serving
// certificate verified for the VIP (the certificates carry the VIP, not the floating IP). It
// shows the router's neighbour entry for the VIP.
func (d *demo) proveFrontDoor(ctx context.Context) error {
	h := d.cluster.Net()
	if dataplane.Ping(ctx, d.dp.ClientNS, h.Nodes()[0].IP().String(), time.Second) {
		return fmt.Errorf("the external client reaches node address %s directly; its only way in must be the floating IP", h.Nodes()[0].IP())
	}
	cfg := h.Nodes()[0].RESTConfig()
	cfg.Host = "https://" + d.dns
	cfg.ServerName = h.VIP().String()
	cfg.Dial = d.outside.DialContext
	// The L3 agent applies the floating IP after the exposure is Succeeded (its status goes
	// from DOWN to ACTIVE): wait until the router answers for it.
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return dataplane.Ping(ctx, d.dp.ClientNS, d.dns, time.Second), nil
	})
	if err != nil {
		return fmt.Errorf("the floating IP %s does not answer ping from %s within a minute: %w", d.dns, d.dp.ClientNS, err)
	}
	d.out.Printf("the floating IP answers ping from outside after %s (the L3 agent applied it)", time.Since(start).Round(100*time.Millisecond))
	if err := d.callAPI(ctx, cfg, fmt.Sprintf("%s (%s, outside)", d.dp.ClientNS, d.dp.ClientIP), "FRONT DOOR: GET"); err != nil {
		return err
	}
	if out, err := dataplane.Exec(ctx, d.dp.RouterNS, "ip", "neigh", "show", h.VIP().String()); err == nil {
		d.out.Printf("the router's neighbour entry (namespace %s): %s", d.dp.RouterNS, strings.TrimSpace(out))
	}
	return d.writeClientKubeconfig(cfg.Host, cfg.ServerName)
}

// callAPI calls /readyz and lists the Nodes with the admin identity of cfg, as from says,
// and prints both.
func (d *demo) callAPI(ctx context.Context, cfg *rest.Config, from, verb string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	start := time.Now()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s/readyz from %s: %w", cfg.Host, from, err)
	}
	d.out.Printf("%s %s/readyz from %s: %q in %s", verb, cfg.Host, from, strings.TrimSpace(string(body)), time.Since(start).Round(time.Millisecond))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Nodes through %s: %w", cfg.Host, err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name+"("+internalIP(&n)+")")
	}
	d.out.Printf("kubectl-equivalent 'get nodes' through %s: %s", cfg.Host, strings.Join(names, " "))
	return nil
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return "-"
}

// failover deletes the leader's agent pod while a prober polls the API through the VIP,
// prints how the VIP and the Lease move, the measured outage, and the DaemonSet's new pod.
func (d *demo) failover(ctx context.Context) error {
	h := d.cluster.Net()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leader, err := d.waitLeader(waitCtx)
	if err != nil {
		return err
	}
	pod, err := d.agentPod(ctx, leader)
	if err != nil {
		return err
	}
	client, target, from := h.Client(), netip.AddrPortFrom(h.VIP(), apiServerPort), "the client namespace"
	if d.outside != nil {
		dns, err := netip.ParseAddr(d.dns)
		if err != nil {
			return fmt.Errorf("the DNS value %q: %w", d.dns, err)
		}
		client, target, from = d.outside, netip.AddrPortFrom(dns, apiServerPort), "outside, through the floating IP (the DNS value)"
	}
	prober, err := client.StartProber(ctx, netns.ProbeOptions{
		Mode:       netns.ProbeHTTPS,
		Path:       "/readyz",
		Target:     target,
		ServerName: h.VIP().String(),
		Interval:   20 * time.Millisecond,
		Timeout:    300 * time.Millisecond,
		Duration:   d.opts.failoverProbing,
	})
	if err != nil {
		return err
	}
	d.out.Printf("prober: GET https://%s/readyz every 20ms (timeout 300ms, new TLS connection each) from %s for %s", target, from, d.opts.failoverProbing)
	select {
	case <-ctx.Done():
		prober.Stop()
		return ctx.Err()
	case <-time.After(time.Second):
	}

	if err := d.cluster.Client().CoreV1().Pods(framework.Namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		prober.Stop()
		return fmt.Errorf("deleting pod %s: %w", pod, err)
	}
	deleted := time.Now()
	d.out.Printf("t=0      pod %s on %s (the leader) deleted: the kubelet sends its agent SIGTERM; it drops the VIP and releases the Lease on its way out", pod, leader)

	since := func() string { return fmt.Sprintf("t=%-6s", fmt.Sprintf("%dms", time.Since(deleted).Milliseconds())) }
	lastVIP, lastLease, newLeader := "", "", ""
	deadline := time.After(15 * time.Second)
	for newLeader == "" {
		if hs, err := d.holders(); err == nil {
			if v := describeHolders(hs); v != lastVIP {
				lastVIP = v
				d.out.Printf("%s VIP on: %s", since(), v)
			}
			if holder, err := d.leaseHolder(ctx); err == nil {
				if holder != lastLease {
					lastLease = holder
					shown := holder
					if shown == "" {
						shown = "(released)"
					}
					d.out.Printf("%s Lease holder: %s", since(), shown)
				}
				if len(hs) == 1 && hs[0] != leader && holder == hs[0] {
					newLeader = holder
				}
			}
		}
		select {
		case <-ctx.Done():
			prober.Stop()
			return ctx.Err()
		case <-deadline:
			prober.Stop()
			return fmt.Errorf("no new leader within 15s (VIP on %s, Lease %q)", lastVIP, lastLease)
		case <-time.After(10 * time.Millisecond):
		}
	}
	d.out.Printf("%s new leader %s holds the Lease and the VIP; waiting for the prober to finish ...", since(), newLeader)
	if n := d.cluster.Node(newLeader); n != nil && d.dp == nil {
		clientCtx, cancelClient := context.WithTimeout(ctx, 5*time.Second)
		if err := h.Client().WaitNeighbor(clientCtx, h.VIP(), n.MAC()); err == nil {
			d.out.Printf("%s the client's ARP entry for %s points to %s (%s's eth0): gratuitous ARP arrived", since(), h.VIP(), n.MAC(), newLeader)
		}
		cancelClient()
	}
	if d.dp != nil {
		if out, err := dataplane.Exec(ctx, d.dp.RouterNS, "ip", "neigh", "show", h.VIP().String()); err == nil {
			d.out.Printf("%s the router's neighbour entry: %s (%s's MAC is %s)", since(), strings.TrimSpace(out), newLeader, d.cluster.Node(newLeader).MAC())
		}
	}

	res := prober.Wait()
	d.out.Printf("prober: %d probes, %d failed", res.Probes, res.Failures)
	if len(res.Outages) == 0 {
		d.out.Printf("OUTAGE: none measured (every probe answered 200)")
	}
	for _, o := range res.Outages {
		end := "still failing at the end of probing"
		if !o.Open() {
			end = fmt.Sprintf("until t=%dms", o.End.Sub(deleted).Milliseconds())
		}
		d.out.Printf("OUTAGE: %s (%d failed probes) from t=%dms %s; first error: %s",
			o.Duration().Round(time.Millisecond), o.Failed, o.Start.Sub(deleted).Milliseconds(), end, firstLine(o.FirstError))
	}

	// The DaemonSet controller replaces the pod; its agent comes back as a follower.
	if err := d.ext.WaitAgentsReady(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, d.ext.AgentsReport(ctx))
	}
	replacement, err := d.agentPod(ctx, leader)
	if err != nil {
		return err
	}
	holder, err := d.leaseHolder(ctx)
	if err != nil {
		return err
	}
	d.out.Printf("the DaemonSet replaced the pod: %s runs on %s again and follows; the Lease stays with %s; agents %d/%d Ready",
		replacement, leader, holder, len(d.cluster.Nodes()), len(d.cluster.Nodes()))
	return nil
}

// envFile is where the demo writes the variables to try the front door with.
const envFile = "env.sh"

// writeEnv writes env.sh: source it to reach the running demo.
func (d *demo) writeEnv() error {
	h := d.cluster.Net()
	ingress := d.dns
	node := h.Nodes()[0]
	clientNS := h.Client().Namespace()
	if d.dp != nil {
		clientNS = d.dp.ClientNS
	}
	content := fmt.Sprintf(`# Written by the demo (make demo); source it: . %[1]s
# The front door: the DNS value gardenadm computed at init (the floating IP) from DEMO_CLIENT_NS (with make demo, the external client of
# hack/dataplane.sh, whose only way in is the floating IP); the certificates carry the VIP:
#   ip netns exec "$DEMO_CLIENT_NS" curl --cacert "$DEMO_CA" --resolve "$DEMO_VIP:$DEMO_PORT:$DEMO_INGRESS" "https://$DEMO_VIP:$DEMO_PORT/readyz"
# The kube-apiservers listen in the node namespaces: run kubectl there, e.g.
#   ip netns exec "$DEMO_NODE_NS" "$KUBECTL" get ds,pods -n kube-system -o wide
#   ip netns exec "$DEMO_CLIENT_NS" "$KUBECTL" --kubeconfig "$DEMO_CLIENT_KUBECONFIG" get nodes
export DEMO_INGRESS=%[2]q
export DEMO_VIP=%[3]q
export DEMO_PORT=%[4]d
export DEMO_CLIENT_NS=%[5]q
export DEMO_LAN_CLIENT_NS=%[11]q
export DEMO_NODE_NS=%[6]q
export DEMO_CA=%[7]q
export DEMO_CLIENT_KUBECONFIG=%[8]q
export KUBECONFIG=%[9]q
export KUBECTL=%[10]q
`, filepath.Join(d.opts.stateDir, envFile), ingress, h.VIP(), apiServerPort, clientNS, node.Namespace(),
		h.CAFile(), filepath.Join(d.opts.stateDir, clientKubeconfig), node.Kubeconfig(), filepath.Join(d.cluster.BinDir(), "kubectl"), h.Client().Namespace())
	if err := os.WriteFile(filepath.Join(d.opts.stateDir, envFile), []byte(content), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", envFile, err)
	}
	d.out.Printf("wrote %s (DEMO_INGRESS=%s, DEMO_CLIENT_NS=%s, KUBECONFIG, KUBECTL)", filepath.Join(d.opts.stateDir, envFile), ingress, clientNS)
	return nil
}

// lookAround prints how to inspect the running demo.
func (d *demo) lookAround() {
	h := d.cluster.Net()
	env := filepath.Join(d.opts.stateDir, envFile)
	leaderNS := "<leader's namespace>"
	if hs, err := h.Holders(); err == nil && len(hs) == 1 {
		leaderNS = hs[0].Namespace()
	}
	var nsList []string
	for _, n := range d.cluster.Nodes() {
		nsList = append(nsList, n.Namespace())
	}
	api := `# the API through the VIP, from the client namespace on the nodes' LAN (no front door without
# --front-door, which make demo passes: the floating IP is not routed here)
ip netns exec $DEMO_CLIENT_NS curl -s --cacert $DEMO_CA https://$DEMO_VIP:$DEMO_PORT/readyz; echo`
	if d.outside != nil {
		api = `# the front door: the floating IP from the external client (the certificates carry the VIP)
ip netns exec $DEMO_CLIENT_NS curl -s --cacert $DEMO_CA --resolve $DEMO_VIP:$DEMO_PORT:$DEMO_INGRESS https://$DEMO_VIP:$DEMO_PORT/readyz; echo`
	}
	d.out.Block(". " + env + "\n\n" + api + "\n" + fmt.Sprintf(`ip netns exec $DEMO_CLIENT_NS $KUBECTL --kubeconfig $DEMO_CLIENT_KUBECONFIG get nodes -o wide

# the shoot from a node (its own kube-apiserver)
ip netns exec $DEMO_NODE_NS $KUBECTL -n kube-system get selfhostedshootexposure,lease,daemonset,pods -o wide
ip netns exec $DEMO_NODE_NS $KUBECTL -n %[1]s get deployment,pods -o wide
ip netns exec $DEMO_NODE_NS $KUBECTL -n kube-system get selfhostedshootexposure %[2]s -o yaml

# who holds the VIP, and the agents' metrics (each node namespace)
for ns in %[3]s; do echo "$ns: $(ip netns exec $ns ip -br addr show eth0)"; done
ip netns exec %[4]s sh -c 'curl -s "$(ip -j -4 addr show eth0 | jq -r ".[0].addr_info[0].local")":9482/metrics' | grep '^kube_vip_agent'

# Neutron (project demo): the VIP port, its floating IP and the node ports' allowed address pairs
hack/demo.sh neutron '/v2.0/ports?tags=%[5]s'
hack/demo.sh neutron '/v2.0/floatingips'
hack/demo.sh neutron '/v2.0/ports?device_owner=compute:nova' '.ports[] | {name, fixed_ips, allowed_address_pairs}'

# logs: the demo's, the kubelets' and containerd's (per node), the containers' (pod-logs)
less %[6]s/demo.log
ls %[7]s/*/

# fail over again: delete the leader's agent pod (graceful), or SIGKILL its process (a crash)
ip netns exec $DEMO_NODE_NS $KUBECTL -n kube-system delete pod -l app.kubernetes.io/name=kube-vip-agent --field-selector spec.nodeName=$(ip netns exec $DEMO_NODE_NS $KUBECTL -n kube-system get lease %[8]s -o jsonpath='{.spec.holderIdentity}')

# stop everything (the exposure is deleted through the controller, which releases the Neutron resources)
make demo-down`,
		extension.ReleaseNamespace, extension.ExposureName, strings.Join(nsList, " "), leaderNS,
		openstack.ClusterTag(d.opts.technicalID), d.opts.stateDir, d.clusterDir(), agentrollout.LeaseName))
}
