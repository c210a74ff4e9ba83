// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AddNode adds a node to a running harness, as a control-plane machine joins: its
// namespace, its NIC from Options.NIC (the next index), and with a control plane its etcd
// member (added to the cluster first) and kube-apiserver, serving a certificate of the
// harness's CA for its own address. It returns when the kube-apiserver is ready.
func (h *Harness) AddNode(ctx context.Context) (*Node, error) {
	if h.opts.NIC == nil {
		return nil, errors.New("AddNode needs a NIC provider (Options.NIC)")
	}
	h.mu.Lock()
	index := h.plugged
	h.plugged++
	name := fmt.Sprintf("node%d", index+1)
	nsName := h.id + "-" + name
	h.created = append(h.created, nsName)
	h.mu.Unlock()
	if _, err := ip(ctx, "netns", "add", nsName); err != nil {
		return nil, err
	}
	if _, err := runIn(ctx, nsName, "ip", "link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	nic, err := h.opts.NIC.Plug(ctx, index, nsName)
	if err != nil {
		return nil, fmt.Errorf("plugging %s: %w", name, err)
	}
	if !h.opts.Subnet.Contains(nic.Addr) {
		return nil, fmt.Errorf("plugging %s: address %s is outside the subnet %s", name, nic.Addr, h.opts.Subnet)
	}
	ns, err := openNamespace(nsName)
	if err != nil {
		return nil, err
	}
	n := &Node{h: h, name: name, index: index, ns: ns, addr: nic.Addr, mac: nic.MAC}
	h.mu.Lock()
	h.nodes = append(h.nodes, n)
	h.mu.Unlock()
	if h.pki == nil {
		return n, nil
	}
	return n, h.joinControlPlane(ctx, n)
}

// joinControlPlane adds the node's etcd member through another node's member, as
// `etcdctl member add` does, and starts its etcd and kube-apiserver.
func (h *Harness) joinControlPlane(ctx context.Context, n *Node) error {
	peer := h.etcdPeer(n)
	if peer == nil {
		return errors.New("no running etcd member to join")
	}
	var added struct {
		Members []etcdMember `json:"members"`
	}
	peerURL := "http://" + net.JoinHostPort(n.addr.String(), "2380")
	if err := peer.etcdGateway(ctx, "/v3/cluster/member/add", map[string][]string{"peerURLs": {peerURL}}, &added); err != nil {
		return err
	}
	var cluster []string
	for _, m := range added.Members {
		name := m.Name
		if name == "" { // the new member has no name until it starts
			name = n.name
		}
		for _, u := range m.PeerURLs {
			cluster = append(cluster, name+"="+u)
		}
	}
	certFile, keyFile, err := h.servingFor(n)
	if err != nil {
		return err
	}
	if err := h.configureControlPlane(n, cluster, "existing", certFile, keyFile); err != nil {
		return err
	}
	if n.etcd, err = n.Start(ctx, n.etcdOpts); err != nil {
		return err
	}
	if err := n.StartAPIServer(ctx); err != nil {
		return err
	}
	return n.WaitAPIServerReady(ctx)
}

// etcdMember is one entry of etcd's member list.
type etcdMember struct {
	ID       json.Number `json:"ID"`
	Name     string      `json:"name"`
	PeerURLs []string    `json:"peerURLs"`
}

// etcdPeer is another node whose etcd runs, or nil.
func (h *Harness) etcdPeer(not *Node) *Node {
	for _, o := range h.Nodes() {
		if o != not && o.Etcd() != nil && !o.Etcd().Exited() {
			return o
		}
	}
	return nil
}

// servingFor writes a serving certificate of the harness's CA for a node that joined
// later: the names and VIPs of the first one, and the node's own addresses.
func (h *Harness) servingFor(n *Node) (certFile, keyFile string, err error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), n.addr.AsSlice()}
	if ip6 := n.IP6(); ip6.IsValid() {
		ips = append(ips, ip6.AsSlice())
	}
	for _, v := range h.VIPs() {
		ips = append(ips, v.AsSlice())
	}
	kp, err := h.pki.issue(cert.Config{CommonName: "kube-apiserver", AltNames: cert.AltNames{DNSNames: servingNames, IPs: ips},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return "", "", err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(kp.key)
	if err != nil {
		return "", "", err
	}
	dir := filepath.Dir(h.pki.caFile)
	certFile, keyFile = filepath.Join(dir, n.name+"-apiserver.crt"), filepath.Join(dir, n.name+"-apiserver.key")
	if err := os.WriteFile(certFile, certPEM(kp.cert), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, keyPEM, 0o600)
}

// RemoveNode takes a node out of the running harness, as a cloud deletes a replaced
// machine: its etcd member leaves the cluster (through another member), every process in
// its namespace ends, the NIC provider releases its interface and the namespace goes.
// Whatever runs on top (containerd, kubelet) should be stopped first.
func (h *Harness) RemoveNode(ctx context.Context, n *Node) error {
	h.mu.Lock()
	i := slices.Index(h.nodes, n)
	if i < 0 {
		h.mu.Unlock()
		return fmt.Errorf("%s is no node of the harness", n)
	}
	h.nodes = slices.Delete(h.nodes, i, i+1)
	h.mu.Unlock()
	var errs []error
	if n.Etcd() != nil {
		errs = append(errs, h.leaveEtcd(ctx, n))
	}
	n.KillAPIServer()
	if p := n.Etcd(); p != nil {
		_ = p.Stop(5 * time.Second) // its exit status says nothing once it left
	}
	// Its handle stays open until Close: a sampler may still read the node's addresses.
	h.mu.Lock()
	h.removed = append(h.removed, n)
	h.mu.Unlock()
	if h.opts.NIC != nil {
		errs = append(errs, h.opts.NIC.Unplug(ctx, n.index, n.ns.name))
		h.mu.Lock()
		h.unplugged = append(h.unplugged, n.index)
		h.mu.Unlock()
	}
	errs = append(errs, removeNamespace(ctx, n.ns.name))
	return errors.Join(errs...)
}

// leaveEtcd removes the node's member from the etcd cluster through another member.
func (h *Harness) leaveEtcd(ctx context.Context, n *Node) error {
	peer := h.etcdPeer(n)
	if peer == nil {
		return nil
	}
	var list struct {
		Members []etcdMember `json:"members"`
	}
	if err := peer.etcdGateway(ctx, "/v3/cluster/member/list", struct{}{}, &list); err != nil {
		return err
	}
	for _, m := range list.Members {
		if m.Name == n.name {
			return peer.etcdGateway(ctx, "/v3/cluster/member/remove", map[string]json.Number{"ID": m.ID}, nil)
		}
	}
	return fmt.Errorf("no etcd member named %s", n.name)
}

// RESTConfig returns an admin config for the cluster's kube-apiserver on whichever node
// serves it: each connection goes to the first current node that accepts it, as through a
// load balancer, so that the config outlives the node it first reached (RemoveNode) and a
// node whose kube-apiserver is down. nil without control plane.
func (h *Harness) RESTConfig() *rest.Config {
	if h.pki == nil {
		return nil
	}
	port := strconv.Itoa(int(h.opts.APIServerPort))
	return &rest.Config{
		// A name of the serving certificates; Dial picks the node.
		Host: "https://" + net.JoinHostPort("kubernetes", port),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   h.pki.caPEM,
			CertData: h.pki.adminCertPEM,
			KeyData:  h.pki.adminKeyPEM,
		},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var errs []error
			for _, n := range h.Nodes() {
				c, err := n.DialContext(ctx, network, netip.AddrPortFrom(n.addr, h.opts.APIServerPort).String())
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, fmt.Errorf("no node's kube-apiserver accepts: %w", errors.Join(errs...))
		},
		Timeout: 5 * time.Second,
	}
}
