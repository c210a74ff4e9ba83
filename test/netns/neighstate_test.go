// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// Tests and the demo print these names; a state with several bits set is named by the
// most telling one, as `ip neigh` does.
func TestNeighStateNamesAsIPNeigh(t *testing.T) {
	for _, tc := range []struct {
		state int
		want  string
	}{
		{netlink.NUD_REACHABLE, "REACHABLE"},
		{netlink.NUD_STALE | netlink.NUD_NOARP, "STALE"},
		{netlink.NUD_PROBE, "PROBE"},
		{netlink.NUD_INCOMPLETE, "INCOMPLETE"},
		{netlink.NUD_PERMANENT | netlink.NUD_NOARP, "PERMANENT"},
		{netlink.NUD_NOARP, "NOARP"},
		{0, "0x0"},
	} {
		if got := neighState(tc.state); got != tc.want {
			t.Errorf("neighState(0x%x) = %s, want %s", tc.state, got, tc.want)
		}
	}
}
