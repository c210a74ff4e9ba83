// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// vipKubeconfig is the file name of the admin kubeconfig whose server is the VIP.
const vipKubeconfig = "vip.kubeconfig"

// proveAPI calls the shoot's API through the VIP from the client namespace: /readyz, and
// a list of the Nodes with the admin identity. It also writes a kubeconfig for the VIP.
func (d *demo) proveAPI(ctx context.Context) error {
	cfg := d.nodes[0].ns.RESTConfig()
	cfg.Host = "https://" + netip.AddrPortFrom(d.h.VIP(), 6443).String()
	cfg.Dial = d.h.Client().DialContext
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for the VIP: %w", err)
	}
	start := time.Now()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s/readyz from the client namespace: %w", cfg.Host, err)
	}
	d.out.Printf("GET %s/readyz from %s (%s): %q in %s", cfg.Host, d.h.Client().Namespace(), d.h.Client().IP(), strings.TrimSpace(string(body)), time.Since(start).Round(time.Millisecond))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Nodes through the VIP: %w", err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name+"("+internalIP(&n)+")")
	}
	d.out.Printf("kubectl-equivalent 'get nodes' through the VIP: %s", strings.Join(names, " "))
	neigh, ok, err := d.h.Client().Neighbor(d.h.VIP())
	if err == nil && ok {
		owner := "?"
		if n := d.h.NodeByMAC(neigh.MAC); n != nil {
			owner = d.nodeByNamespace(n).name
		}
		d.out.Printf("the client's ARP entry: %s is at %s (%s's eth0), %s", d.h.VIP(), neigh.MAC, owner, neigh.State)
	}

	// A kubeconfig for the VIP, for a look from the client namespace.
	kc, err := clientcmd.LoadFromFile(d.nodes[0].ns.Kubeconfig())
	if err != nil {
		return fmt.Errorf("reading %s: %w", d.nodes[0].ns.Kubeconfig(), err)
	}
	for _, c := range kc.Clusters {
		c.Server = cfg.Host
	}
	if err := clientcmd.WriteToFile(*kc, filepath.Join(d.opts.stateDir, vipKubeconfig)); err != nil {
		return fmt.Errorf("writing the VIP kubeconfig: %w", err)
	}
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

// failover terminates the leader's agent while a prober polls the API through the VIP,
// prints how the VIP and the Lease move, and the measured outage.
func (d *demo) failover(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leader, err := d.waitLeader(waitCtx)
	if err != nil {
		return err
	}
	prober, err := d.h.Client().StartProber(ctx, netns.ProbeOptions{
		Mode:     netns.ProbeHTTPS,
		Path:     "/readyz",
		Interval: 20 * time.Millisecond,
		Timeout:  300 * time.Millisecond,
		Duration: d.opts.failoverProbing,
	})
	if err != nil {
		return err
	}
	d.out.Printf("prober: GET https://%s:6443/readyz every 20ms (timeout 300ms, new TLS connection each) from the client namespace for %s", d.h.VIP(), d.opts.failoverProbing)
	select {
	case <-ctx.Done():
		prober.Stop()
		return ctx.Err()
	case <-time.After(time.Second):
	}

	proc, err := d.kubelet.terminate(leader)
	if err != nil {
		prober.Stop()
		return err
	}
	killed := time.Now()
	d.out.Printf("t=0      SIGTERM to the agent on %s (pid %d), the leader; it drops the VIP and releases the Lease on its way out", leader, proc.PID())

	since := func() string { return fmt.Sprintf("t=%-6s", fmt.Sprintf("%dms", time.Since(killed).Milliseconds())) }
	lastVIP, lastLease, exited := "", "", false
	newLeader := ""
	deadline := time.After(15 * time.Second)
	for newLeader == "" {
		if !exited && proc.Exited() {
			exited = true
			d.out.Printf("%s agent on %s exited (%s)", since(), leader, exitDescription(proc))
		}
		if hs, err := d.holders(); err == nil {
			if v := describeHolders(hs); v != lastVIP {
				lastVIP = v
				d.out.Printf("%s VIP on: %s", since(), v)
			}
			if h, err := d.leaseHolder(ctx); err == nil {
				if h != lastLease {
					lastLease = h
					shown := h
					if shown == "" {
						shown = "(released)"
					}
					d.out.Printf("%s Lease holder: %s", since(), shown)
				}
				if len(hs) == 1 && hs[0] != leader && h == hs[0] {
					newLeader = h
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
	if n := d.nodeByName(newLeader); n != nil {
		clientCtx, cancelClient := context.WithTimeout(ctx, 5*time.Second)
		if err := d.h.Client().WaitNeighbor(clientCtx, d.h.VIP(), n.ns.MAC()); err == nil {
			d.out.Printf("%s the client's ARP entry for %s points to %s (%s's eth0): gratuitous ARP arrived", since(), d.h.VIP(), n.ns.MAC(), newLeader)
		}
		cancelClient()
	}

	res := prober.Wait()
	d.out.Printf("prober: %d probes, %d failed", res.Probes, res.Failures)
	if len(res.Outages) == 0 {
		d.out.Printf("OUTAGE: none measured (every probe answered 200)")
	}
	for _, o := range res.Outages {
		end := "still failing at the end of probing"
		if !o.Open() {
			end = fmt.Sprintf("until t=%dms", o.End.Sub(killed).Milliseconds())
		}
		d.out.Printf("OUTAGE: %s (%d failed probes) from t=%dms %s; first error: %s",
			o.Duration().Round(time.Millisecond), o.Failed, o.Start.Sub(killed).Milliseconds(), end, firstLine(o.FirstError))
	}

	// The stand-in restarts the terminated agent; it comes back as a follower.
	rejoinCtx, cancelRejoin := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRejoin()
	for {
		if p := d.kubelet.agent(leader); p != nil && p != proc && !p.Exited() {
			holder, err := d.leaseHolder(ctx)
			if err == nil {
				d.out.Printf("the agent on %s runs again (pid %d) and follows; the Lease stays with %s", leader, p.PID(), holder)
			}
			break
		}
		select {
		case <-rejoinCtx.Done():
			return fmt.Errorf("the agent on %s was not restarted: %w", leader, rejoinCtx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// lookAround prints how to inspect the running demo.
func (d *demo) lookAround() {
	client := d.h.Client().Namespace()
	node := d.nodes[0]
	vipKC := filepath.Join(d.opts.stateDir, vipKubeconfig)
	tag := openstack.ClusterTag(d.opts.technicalID)
	ca := d.h.CAFile()
	leaderNS := "<leader's namespace>"
	if hs, err := d.h.Holders(); err == nil && len(hs) == 1 {
		leaderNS = hs[0].Namespace()
	}
	var nsList []string
	for _, n := range d.nodes {
		nsList = append(nsList, fmt.Sprintf("%s=%s", n.name, n.ns.Namespace()))
	}
	d.out.Printf("namespaces: %s, client=%s, bridge=%s-br", strings.Join(nsList, " "), client, d.h.ID())
	d.out.Block(fmt.Sprintf(`# the API through the VIP, from the client namespace
ip netns exec %[1]s curl -s --cacert %[2]s https://%[3]s:6443/readyz; echo
ip netns exec %[1]s kubectl --kubeconfig %[4]s get nodes -o wide
ip netns exec %[1]s ip neigh show %[3]s

# the shoot from a node (its own kube-apiserver on 127.0.0.1:6443)
ip netns exec %[5]s kubectl --kubeconfig %[6]s -n kube-system get selfhostedshootexposure,lease
ip netns exec %[5]s kubectl --kubeconfig %[6]s -n kube-system get daemonset,pod,role,rolebinding,serviceaccount -l app.kubernetes.io/name=kube-vip-agent -o wide
ip netns exec %[5]s kubectl --kubeconfig %[6]s -n kube-system get selfhostedshootexposure %[7]s -o yaml
ip netns exec %[5]s kubectl --kubeconfig %[6]s -n kube-system get lease %[8]s -o yaml

# who holds the VIP, and the agents' metrics (each node namespace)
for ns in %[9]s; do echo "$ns: $(ip netns exec $ns ip -br addr show eth0)"; done
ip netns exec %[5]s curl -s 127.0.0.1:9482/metrics | grep '^kube_vip_agent'

# the controller's OpenStack calls
curl -s http://%[10]s/metrics | grep '^kube_vip_openstack_requests_total'

# Neutron (project demo): the VIP port, its floating IP and the node ports' allowed address pairs
hack/demo.sh neutron '/v2.0/ports?tags=%[11]s'
hack/demo.sh neutron '/v2.0/floatingips'
hack/demo.sh neutron '/v2.0/ports?device_owner=compute:nova' '.ports[] | {name, fixed_ips, allowed_address_pairs}'

# logs
less %[12]s/demo.log %[12]s/controller.log
ls %[13]s      # <node>-agent.log, <node>-kube-apiserver.log, <node>-etcd.log

# fail over again: SIGTERM (graceful; SIGKILL lets the VIP expire with its lifetime) to the agent in the
# leader's namespace (now %[14]s); the kubelet stand-in restarts it after %[15]s
for p in $(ip netns pids %[14]s); do [ "$(cat /proc/$p/comm)" = kube-vip-agent ] && kill -TERM $p; done

# stop everything (the exposure is deleted through the controller, which releases the Neutron resources)
make demo-down`,
		client, ca, d.h.VIP(), vipKC,
		node.ns.Namespace(), node.ns.Kubeconfig(), exposureName, agentrollout.LeaseName,
		strings.Join(namespaces(d.nodes), " "), d.opts.metricsAddress, tag,
		d.opts.stateDir, d.h.Dir(), leaderNS, restartDelay))
}

func namespaces(nodes []shootNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ns.Namespace())
	}
	return out
}
