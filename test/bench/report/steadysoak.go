// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
)

// SteadySoak is the result of -steady-soak: each system on a fresh deployment, left alone
// but for lossy ARP on every node and a follower blip every so often.
type SteadySoak struct {
	Options runner.SteadySoakOptions `json:"options"`
	Systems []SteadySoakSystem       `json:"systems"`
	Took    time.Duration            `json:"took"`
}

// SteadySoakSystem is the steady soak of one system.
type SteadySoakSystem struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	Result      runner.SteadySoakResult `json:"result"`
	Error       string                  `json:"error,omitempty"`
}

// movesListed bounds the moves printed per system; the JSON file has them all.
const movesListed = 10

// PrintSteadySoak prints the steady soak's table, one row per system, and the moves.
func PrintSteadySoak(w io.Writer, s *SteadySoak) error {
	o := s.Options
	legend(w, fmt.Sprintf("Steady soak: %s per system on a fresh deployment, every node's ARP and NDP frames %.3g%% lost, a follower blip every %s; took %s",
		o.Duration, 100*o.ARPLoss, o.BlipEvery, s.Took.Round(time.Second)),
		fmt.Sprintf("(blips = follower blips [skipped: not exactly one holder], each follower in turn alternating a blackhole of %s with its carrier up and a link flap of %s;", o.Blackhole, o.Flap),
		"changes = every change of the holder set; needless moves = times the VIP came to rest on another node, all needless as nothing",
		fmt.Sprintf("failed on the holder; after a blip = those within a blip or %s after it; 2-holder = time the sampler saw the VIP on two nodes;", runner.BlipAftermath),
		"2 answerers = time two MACs answered the client's ARP requests for the VIP; outage = the client's longest time without the VIP;",
		"goals (ours), checked in met: 0 needless moves (so none after a blip either), 0 ms 2-holder, 0 ms 2 answerers)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tsoaked\tblips\tchanges\tneedless moves\tafter a blip\t2-holder\t2 answerers\toutage\trestarts\tmet")
	for _, sys := range s.Systems {
		r := sys.Result
		if sys.Error != "" && r.Took == 0 {
			fmt.Fprintf(tw, "%s\t(failed: %s)\n", sys.Name, oneLine(sys.Error))
			continue
		}
		blips := fmt.Sprintf("%d", len(r.Blips))
		if r.SkippedBlips > 0 {
			blips += fmt.Sprintf(" [%d]", r.SkippedBlips)
		}
		met := ""
		if isOurs(sys.Name) {
			met = "yes"
			if len(r.Moves) > 0 || r.TwoHolders > 0 || r.TwoAnswerers > 0 || sys.Error != "" {
				met = "NO"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%dms\t%dms\t%s\t%d\t%s\n", sys.Name, r.Took.Round(time.Second), blips, r.HolderChanges,
			len(r.Moves), r.MovesAfterBlips(), r.TwoHolders.Milliseconds(), r.TwoAnswerers.Milliseconds(), sec(r.LongestOutage), r.Restarts, met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sys := range s.Systems {
		r := sys.Result
		for k, m := range r.Moves {
			if k == movesListed {
				fmt.Fprintf(w, "%s: %d more moves in the JSON file\n", sys.Name, len(r.Moves)-k)
				break
			}
			after := ""
			if m.AfterBlip >= 0 && m.AfterBlip < len(r.Blips) {
				b := r.Blips[m.AfterBlip]
				after = fmt.Sprintf(" (after the %s of %s at %s", b.Kind, b.Node, clock(b.At))
				if b.EtcdLeader != "" {
					after += ", etcd leader " + b.EtcdLeader
				}
				after += ")"
			}
			fmt.Fprintf(w, "%s: move at %s, %s -> %s%s\n", sys.Name, clock(m.At), m.From, m.To, after)
		}
		if sys.Error != "" {
			fmt.Fprintf(w, "%s: error: %s\n", sys.Name, oneLine(sys.Error))
		}
	}
	return nil
}

// clock writes a time since the start of a soak as minutes:seconds.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
