// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
)

// The IPv6 rows wrap each system; the runner asks the wrapped one whether it keeps off
// etcd's leader before it hands etcd's leadership away ahead of a link-down run.
func TestIPv6SystemKeepsTheEtcdAwareness(t *testing.T) {
	for _, tc := range []struct {
		name string
		sys  sut.System
		want bool
	}{
		{"ours with the yield", sut.Agent{}, true},
		{"ours without the yield", sut.Agent{NoEtcdYield: true}, false},
		{"keepalived", sut.Keepalived{}, false},
	} {
		var wrapped sut.System = ipv6System{tc.sys}
		aware, ok := wrapped.(sut.EtcdAware)
		if got := ok && aware.KeepsOffEtcdLeader(); got != tc.want {
			t.Errorf("%s: the IPv6 row keeps off etcd's leader = %t, want %t", tc.name, got, tc.want)
		}
	}
}
