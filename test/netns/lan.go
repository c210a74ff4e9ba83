// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
)

// endpoint is a namespace attached to the bridge (a node or the client).
type endpoint struct {
	name   string // short name: node1, client
	nsName string
	addr   netip.Addr
	mac    net.HardwareAddr // set by a NIC provider; default macFor(addr)
}

func (h *Harness) buildLAN(ctx context.Context) error {
	bits := h.opts.Subnet.Bits()
	eps := make([]endpoint, 0, h.opts.Nodes+1)
	for i := range h.opts.Nodes {
		name := fmt.Sprintf("node%d", i+1)
		eps = append(eps, endpoint{name: name, nsName: h.id + "-" + name, addr: hostAddr(h.opts.Subnet, byte(11+i))})
	}
	eps = append(eps, endpoint{name: "client", nsName: h.id + "-client", addr: hostAddr(h.opts.Subnet, 5)})
	brNS := h.id + "-br"

	// Namespaces first, recorded before anything else can fail, so Close removes them.
	var add strings.Builder
	all := []string{brNS}
	for _, ep := range eps {
		all = append(all, ep.nsName)
	}
	for _, n := range all {
		fmt.Fprintf(&add, "netns add %s\n", n)
	}
	h.mu.Lock()
	h.created = all
	h.mu.Unlock()
	if err := ipBatch(ctx, "", add.String()); err != nil {
		return err
	}

	// The bridge and one veth pair per endpoint, the inner end moved into the endpoint.
	var br strings.Builder
	br.WriteString("link set lo up\n")
	br.WriteString("link add br0 type bridge forward_delay 0 stp_state 0\n")
	br.WriteString("link set br0 up\n")
	for _, ep := range h.bridged(eps) {
		port := "p-" + ep.name
		fmt.Fprintf(&br, "link add %s type veth peer name eth0 address %s netns %s\n", port, macFor(ep.addr), ep.nsName)
		fmt.Fprintf(&br, "link set %s master br0\n", port)
		fmt.Fprintf(&br, "link set %s up\n", port)
	}
	if err := ipBatch(ctx, brNS, br.String()); err != nil {
		return err
	}
	for _, ep := range h.bridged(eps) {
		cmds := fmt.Sprintf("link set lo up\naddr add %s/%d dev eth0\n", ep.addr, bits)
		if ip6 := h.ipv6For(ep.addr); ip6.IsValid() {
			// nodad: usable at once, like the VIP itself.
			cmds += fmt.Sprintf("addr add %s/64 dev eth0 nodad\n", ip6)
		}
		if h.opts.Subnet6.IsValid() {
			host := ep.addr.As4()[3]
			cmds += fmt.Sprintf("addr add %s/%d dev eth0 nodad\n", hostAddr6(h.opts.Subnet6, host), h.opts.Subnet6.Bits())
		}
		cmds += "link set eth0 up\n"
		if h.opts.Subnet6.IsValid() || h.opts.VIP6.IsValid() {
			// The VIP is added without DAD by the daemons; the link-local address, which
			// the NDP guard sends from, must not wait for it either. A link-down scenario
			// must not cost the node its IPv6 address (the kernel drops it by default).
			if _, err := runIn(ctx, ep.nsName, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.eth0.accept_dad=0",
				"net.ipv6.conf.eth0.keep_addr_on_down=1"); err != nil {
				return err
			}
		}
		if err := ipBatch(ctx, ep.nsName, cmds); err != nil {
			return err
		}
	}

	if h.opts.NIC != nil {
		if err := h.plugNodes(ctx, eps); err != nil {
			return err
		}
	}

	var err error
	if h.bridge, err = openNamespace(brNS); err != nil {
		return err
	}
	for i, ep := range eps {
		ns, err := openNamespace(ep.nsName)
		if err != nil {
			return err
		}
		if ep.mac == nil {
			ep.mac = macFor(ep.addr)
		}
		if ep.name == "client" {
			h.client = &Client{h: h, ns: ns, addr: ep.addr, mac: ep.mac}
			continue
		}
		h.nodes = append(h.nodes, &Node{h: h, name: ep.name, index: i, ns: ns, addr: ep.addr, mac: ep.mac})
	}
	return nil
}

// bridged are the endpoints on the harness's bridge: all, or only the client when a NIC
// provider plugs the nodes.
func (h *Harness) bridged(eps []endpoint) []endpoint {
	if h.opts.NIC == nil {
		return eps
	}
	return eps[len(eps)-1:]
}

// ipBatch runs `ip [-n ns] -batch -` with cmds on stdin.
func ipBatch(ctx context.Context, ns, cmds string) error {
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdin = strings.NewReader(cmds)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s\ncommands:\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)), cmds)
	}
	return nil
}
