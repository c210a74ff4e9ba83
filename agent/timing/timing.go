// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package timing holds the agent's election and VIP timings and the rule that keeps the
// VIP on at most one node. The election, the keeper and the validation of the agent's
// flags and of the providerConfig all use the functions here, so the rule exists once.
//
// A term starts at S, the start of the leader's last successful acquisition or renewal.
// A follower sees that write only after it started, so the earliest takeover is S + L
// (L = LeaseDuration, and a follower waits at least the leader's L, see election).
//
// The rule has two halves, one for a holder that lives and one for a holder that died or
// froze:
//
//   - A living holder removes the VIP itself: its term ends at S + D (D = RenewDeadline)
//     and it removes the VIP within ActiveRemovalLateness, so before S + L (Problems
//     rejects every set of timings where D + ActiveRemovalLateness is not below L). After
//     each refresh it checks the clock again and removes the VIP at once if a freeze
//     carried it past the end of its term.
//   - A holder that died or froze cannot remove anything; its kernel still has the VIP
//     until the address's lifetime runs out, and answers ARP for it. The next leader adds
//     the VIP only after its takeover guard asked for it TakeoverProbes times in a row,
//     TakeoverProbeInterval apart, and no other host answered within TakeoverReplyBound of
//     any of them (ARP for IPv4, neighbour solicitation for IPv6); while one answers, it
//     waits. So the VIP is never added while another node holds it, however late the
//     kernel removes an expired address, provided that (the guard's assumptions) the nodes
//     share the L2 segment, the holder's kernel answers (arp_ignore, arptables and
//     ip6tables allow it), every answer arrives within TakeoverReplyBound and not
//     TakeoverProbes answers in a row are lost.
//   - A dual-stack exposure (one VIP per family) is held as one: the same term, the same
//     lifetime for each address, and a guard per family whose verdicts must all be "free"
//     in the same call before any VIP is added (arp.Guards). A removal that fails for one
//     family does not end the term early for the rule: the Lease is then not released and
//     that address runs out by its lifetime, while the next leader's guard of that family
//     waits for it, and with it the takeover of both.
//
// A third case is a holder whose renewals stall without a verdict (an etcd election): it
// may hold its term StalledWriteHold longer (StalledTerm) where the guard protects the VIP,
// because a follower that takes the Lease meanwhile adds the VIP only once this holder
// stopped answering, and this holder learns of the takeover from its next renewal's
// conflict. That hold assumes L2 reachability between the holder and the taker, as the
// guard does (docs/agent-reference.md, "Holding through an etcd election"). A follower that
// finds the Lease expired while such a holder still answers for the VIP reads it again
// StalledRetryWait later, after the holder's next retry, and takes it only if unchanged
// (AnsweredTakeoverDelay); that costs a dead or frozen holder's takeover nothing while L +
// StalledRetryWait + TakeoverRoom ≤ V, since its node serves on the VIP until its lapse
// and the follower's guard waits for that anyway, and it is skipped otherwise.
//
// A fourth case is a holder that fell silent on L2 (its link went down, its node lost the
// segment): a follower that heard the VIP answer after it first saw this holder's record,
// and then heard no answer from any family for EarlyTakeoverSilence while it probed every
// FollowerProbeInterval, takes the Lease before the term expires, by a write on the
// resourceVersion it saw, so that of several followers one wins. Still never two holders:
// silence means no kernel answers for the VIP; the taker adds it only after its own guard;
// and a holder that is alive learns of the takeover from its watch or its next renewal's
// conflict and removes the VIP. While its term runs it never adds a missing VIP without the
// guard: a refresh only refreshes an address that is there, and a VIP that went missing
// goes back through the guard, which waits while the taker answers. One removed by anything
// but the keeper (by hand) goes back only in a term that a write of the holder's own began
// after the loss, as after an acquisition: the holder notices the removal at once (its
// address watch), renews at once, and its guard probes while that write is on the wire.
// That write and a follower's early write are compare-and-swaps on the same record, so only
// one side adds the VIP. A follower's early write on the record the holder then wrote
// starts only once it saw that record, and its guard hears the holder unless the holder,
// between its write's commit and its add, stalls for longer than that follower's watch and
// TakeoverSilence; that follower must also have heard EarlyTakeoverSilence of silence,
// which a holder that does not stall never lets pass. The add comes after the write, like a
// new leader's after its acquisition, so a VIP found missing after RefreshBy is not added
// again in the term whose refreshes ended. Back within a write and TakeoverSilence, the VIP
// does not fall silent for EarlyTakeoverSilence and does not move. One that the health
// gate removed goes back by the same rule: the election resigns on the closed gate at its
// next step, but a gate that opens again first (the election may sit in a renewal write)
// must not re-add through the guard alone while a follower's early write is on the wire;
// the reopening asks for the renewal at once. A follower that heard the holder and then
// reopened its probe (its link flapped) forgets what it heard, and so does one that heard
// another follower's probes and then none for PeerSilence (it is cut off itself, its
// carrier may be up: its silence is no evidence against the holder, and an early write of
// its own could commit late, after the heal), and trusts no silence until it hears its peers
// again or PeerReturnWait has passed; one whose early write failed tries again only
// on a silence that began after the failure. A follower that never heard the holder (a fresh holder still in its guard,
// a network that filters ARP replies) waits for the expiry, so a misconfigured network
// cannot make the Lease ping-pong. The case assumes what the guard does (L2 reachability,
// answers within TakeoverReplyBound), that the follower's own link is up (it probes only
// while its link is up, and acts only while eligible), and that a new holder does not stall for longer than EarlyTakeoverSilence
// − TakeoverSilence between its guard's verdict and its first answer. A false silence (4
// answers in a row lost, and the ConfirmProbes sent then) costs a needless move, not a
// second holder; the confirmation only delays the write, which widens the fence's lead.
//
// The holder's half of that case is the fence. A holder cut off at L2 with its carrier up
// (a switch or flow-table fault: no link change, its etcd traffic cut too) does not hear
// the takeover, and in a stalled hold it would keep the VIP until StalledTerm's end; after
// a heal before then, two nodes answer for the VIP. So the holder listens to its followers'
// probes (every FollowerProbeInterval each, no extra traffic), from before its term on: once
// it heard a follower's stream and then hears no request for the VIP for FenceSilence, it
// removes the VIP at once, checked every FenceCheckInterval, and puts it back only as a VIP
// that went missing, after a write of its own. A follower's silence starts when it reads the
// answer to its last probe the holder heard, so it writes no earlier than
// EarlyTakeoverSilence after the holder last heard anybody, and adds TakeoverSilence after
// that; FenceSilence + FenceCheckInterval + ActiveRemovalLateness stays below (390 ms
// against 400 ms). The fence arms only on a stream (a MAC heard twice within FenceSilence),
// as a follower takes early only on a holder it heard: a network that answers ARP for the
// nodes (OVN) or drops the probes never arms it, and a client's sporadic request does not.
// A holder whose followers all stopped probing at once (their agents or links gone) fences
// once, needlessly: that costs its own renewal and the guard's verdict, about 0.1 s and no
// move, and it arms again only on a new stream. Followers probe whenever their link is up,
// eligible or not, so a stalled hold with L2 intact (an etcd election elsewhere) does not
// fence even where a follower's kube-apiserver turns unready meanwhile. A one-way loss
// (holder to followers only) leaves the holder hearing its followers: the taker's guard
// hears nothing and adds, and the holder fences when it hears the taker announce the VIP.
// A follower counts only replies to its own requests as hearing the holder: an announcement
// reaches a follower whose own frames are dropped.
//
// The kernel lifetime V decides how long a dead or frozen holder's node keeps serving the
// VIP. The leader refreshes it right before each renewal's write (the election's
// OnRenewing) and, when V is shorter than L, on every keeper tick until RefreshBy(S) =
// S + max(0, L − V). With the default V = 2 s > L the last refresh of a term is the one at
// its start, and the VIP of a holder that died or froze lives until about S + V +
// KernelExpiryLateness (Lapse), past the earliest takeover S + L: the next leader, leading
// from S + L, waits in its guard while that node answers, and adds the VIP within
// TakeoverSilence + TakeoverProbeInterval of the removal. While it waits the old node still
// serves on the VIP (its kernel answers, its kube-apiserver runs), so a crash or freeze of
// the agent alone costs the guard's verdict, whatever the phase of the term. (With V < L the
// VIP ran out by S + L and such a crash right after a refresh cost L − V more.)
//
// The cost of V > L falls on a node that still answers ARP for the VIP but no longer serves
// (agent and kube-apiserver both dead, the kernel alive): its clients wait until its VIP
// lapses, up to V + KernelExpiryLateness after its last refresh (2.3 s with the defaults,
// R + D later for a retry late in a term), instead of about L + KernelExpiryLateness. And the
// guard probes while the old node answers, about V − L + KernelExpiryLateness (0.8 s) after
// a crash: ~80 probes, each the start of a run of TakeoverProbes that could all lose their
// answer; at 2 % independent loss a false "free" has a chance of about 80 · 0.02^4 ≈ 1.3e-5
// per such takeover (3.5e-5 for a crash during a retry late in the term).
//
// A renewal on the wire: the refresh at the start s of the write outlives the write: should
// the write commit and the leader die before it learns so, followers take over at s + L and
// the VIP runs out at s + V, after that (the guard waits for it). If the write never commits,
// the refresh outlives the term's earliest takeover by s + V − (S + L): at most D + V − L
// for a retry late in the term. Both are the case of a holder that died, above; a living
// holder removes the VIP at the end of its term as always.
//
// Continuity: the last regular refresh of a term, at its start or at most KeeperTick before
// RefreshBy, must last, less KernelExpiryEarliness, until the next renewal (RetryPeriod
// after S) has started and refreshed it again, with MinRenewBudget to spare: max(0, L − V −
// KeeperTick) + V ≥ R + KernelExpiryEarliness + MinRenewBudget, that is L ≥ R + 0.22 s
// while V < L − KeeperTick and V ≥ R + 0.12 s beyond. With renewals at most once a second the
// living holder's rule, L > D + ActiveRemovalLateness, and the room for a slow write, D − R,
// bind first.
package timing

import (
	"fmt"
	"time"
)

const (
	// TakeoverProbeInterval is the pause between two requests of the takeover guard (an ARP
	// request for an IPv4 VIP, a neighbour solicitation for an IPv6 one) while it decides
	// whether another host still holds the VIP.
	TakeoverProbeInterval = 10 * time.Millisecond
	// TakeoverReplyBound is the longest a holder's answer may take, from the guard's request
	// to its arrival in the guard's socket: the wire both ways, the holder's softirq and any
	// queueing on the way. The guard reads what its socket has queued before every verdict,
	// so the taking node's own scheduling does not count. test/integration/vip
	// TestGuardSurvivesLateAndLostReplies delays every answer by 40 ms.
	TakeoverReplyBound = 50 * time.Millisecond
	// TakeoverProbes is how many requests in a row must each have had TakeoverReplyBound
	// to be answered, with no answer or announcement from another host since the first of
	// them, before the guard counts the VIP as free. A holder that answers is missed only
	// if this many answers in a row are lost: with independent loss p, p^TakeoverProbes per
	// verdict (1.6e-7 at 2 % loss).
	TakeoverProbes = 4
	// TakeoverSilence is the least time from the guard's first request to a "free"
	// verdict: the takeover of a VIP that nobody holds costs this much, and the takeover
	// after a crashed holder's kernel removed the VIP costs up to this plus one interval.
	TakeoverSilence = (TakeoverProbes-1)*TakeoverProbeInterval + TakeoverReplyBound
	// KernelExpiryLateness is how late the kernel is expected to remove an IPv4 address
	// after its valid_lft ran out, on a host where no other address changed in the last
	// second. Linux's lifetime check (devinet.c check_lifetime) rounds its next run up to a
	// whole second when that adds less than HZ/4 (250 ms), the timer wheel adds up to one
	// granule (32 ms at HZ=250, 64 ms at HZ=1000 for a one-second timer), and the workqueue
	// adds its scheduling delay. test/integration/vip TestKernelLifetimeExpiry measures it:
	// at worst 216 to 404 ms, by the run, on the 2-core machine this project is tested on.
	// The refresh schedule does not subtract it (RefreshBy): a dead holder's node keeps
	// answering on the VIP for about this long after its lifetime ran out, and the next
	// leader's guard adds the VIP right after. It is not a safety bound: a later kernel
	// only makes the guard wait longer. Lapse uses it.
	KernelExpiryLateness = 300 * time.Millisecond
	// KernelExpiryEarliness is how early the kernel may remove an address: it counts an
	// address as expired HZ/50 before its lifetime ends (at most 20 ms, at HZ=50+). The
	// continuity rule of Problems relies on it, and TestKernelLifetimeExpiry checks it.
	KernelExpiryEarliness = 20 * time.Millisecond
	// ActiveRemovalLateness is the most the living leader may take, after its term ended,
	// to remove the VIP: the election's timer, the callback and one netlink delete, on a
	// node where the agent gets CPU (its pod requests it; docs/agent.md).
	ActiveRemovalLateness = 100 * time.Millisecond
	// KeeperTick is the interval at which the keeper refreshes the VIP and checks the term.
	KeeperTick = 100 * time.Millisecond
	// MinRenewBudget is the least time the continuity rule leaves between the next renewal's
	// due time and the end of the VIP's last regular refresh: the election's timer and the
	// refresh at the renewal's start must fit in it (the write may then take up to a
	// lifetime).
	MinRenewBudget = 100 * time.Millisecond
	// SlowWriteRoom is the time the defaults leave between RetryPeriod and RenewDeadline: a
	// renewal write may take this long before the term ends and the VIP goes (review M3).
	SlowWriteRoom = 300 * time.Millisecond
	// FollowerProbeInterval is the pause between two probes (ARP request, neighbour
	// solicitation) a follower sends for each VIP to learn whether the holder still answers
	// (EarlyTakeoverSilence). A follower reads the answers at its next probe, so a holder's
	// cut shows up to one interval late: 80 ms keeps the early takeover of a holder cut at
	// any point of the cycle within 0.6 s (100 ms missed it by up to 40 ms), for 12.5 small
	// broadcasts a second per follower and VIP and no API request.
	FollowerProbeInterval = 80 * time.Millisecond
	// EarlyTakeoverSilence is how long every VIP family must have gone unanswered, with this
	// follower probing every FollowerProbeInterval, before it takes the Lease of a holder it
	// had heard answer (the holder's link or node is gone: its term would only run out).
	// Four probes in a row lost by a holder that answers, and far above TakeoverSilence, the
	// guard's verdict of a new holder that is about to answer. A false silence is not a
	// second holder: the taker's guard still waits while the holder answers, and the holder
	// steps down on the new record. It is a needless move, which ConfirmProbes makes rare.
	EarlyTakeoverSilence = 4 * FollowerProbeInterval
	// ConfirmProbes is how many more requests a follower sends, ConfirmInterval apart, once
	// the holder has been silent for EarlyTakeoverSilence, before the silence counts: an
	// answer to any of them ends it. A probe needs two frames, so at 2 % loss per frame four
	// in a row are lost about once in 400 000 probes: about once in nine 30-minute soaks
	// of two followers. With the confirmation a false silence needs ten lost in a row, for
	// ConfirmSilence more on every early takeover. It is no safety rule (the guard is), so
	// it need not wait TakeoverReplyBound: an answer slower than ConfirmInterval only
	// weakens it.
	ConfirmProbes = 5
	// ConfirmInterval is the pause between two confirmation requests, each followed by a
	// read: an answer on a LAN takes well under a millisecond.
	ConfirmInterval = 4 * time.Millisecond
	// ConfirmSilence is what the confirmation adds to an early takeover.
	ConfirmSilence = ConfirmProbes * ConfirmInterval
	// SilenceTickSlack is how much short of EarlyTakeoverSilence a silence may measure at the
	// tick that reads its fourth lost answer and still start the confirmation: both ends are
	// read after a ticker wake-up, so without it half of the silences reach the threshold a
	// tick late, 80 ms. Below ConfirmSilence, so the silence has its full length once the
	// burst ends and the election checks it.
	SilenceTickSlack = FollowerProbeInterval / 8
	// FenceSilence is how long a holder that heard its followers' probes (arp.Listener) may
	// hear no request for the VIP before it removes the VIP: it is then cut off from them at
	// L2, whatever its carrier says, and they take its Lease on their EarlyTakeoverSilence.
	// Above the gap of two probes in a row lost from a single follower (3 ×
	// FollowerProbeInterval) by half an interval of jitter; below the followers' threshold by
	// enough that the VIP is off before a taker's guard can pass (Problems' fence rule).
	FenceSilence = 3*FollowerProbeInterval + FollowerProbeInterval/2
	// FenceCheckInterval is how often the holder's listener reads its sockets and checks the
	// silence: the fence acts at most this late.
	FenceCheckInterval = 10 * time.Millisecond
	// PeerSilence is how long a follower that heard another follower's probes may hear no
	// such probe before it counts itself deaf (its own port cut with the carrier up) and
	// forgets the holder it heard: its silence is then no evidence against the holder. One
	// probe lost from a peer (a gap of two intervals), plus half an interval of jitter; with the interval
	// between reading the peer's last probe and the holder's last answer, it stays below
	// EarlyTakeoverSilence, so a cut follower never writes early.
	PeerSilence = 2*FollowerProbeInterval + FollowerProbeInterval/2
	// PeerReturnWait is how long a follower that went deaf (PeerSilence) or whose probe failed
	// trusts no silence of the holder, unless it hears its peers again first; the silence
	// then counts from that moment. Its deafness may have been a peer's cut, and its own cut
	// right after that peer's heal would look like the holder's silence (two followers cut
	// back to back moved the VIP so). Seconds cover such blips; a follower whose peers are
	// gone for good takes over by expiry meanwhile.
	PeerReturnWait = 5 * time.Second
	// StalledWriteHold is how long past the end of its term a holder keeps the VIP while
	// its renewals stall (time out or fail for want of an etcd leader; never a conflict)
	// and the takeover guard protects the VIP (StalledTerm). etcd elects a new leader 1 to
	// 2 election timeouts (1 s by default, randomised up to 2 s) after the old one stopped,
	// and a renewal that started just before the stall is cut off at the end of the term,
	// SlowWriteRoom later: the hold covers a stall of StalledWriteHold + SlowWriteRoom =
	// 2.3 s from the last renewal's start, plus one retry.
	StalledWriteHold = 2 * time.Second
	// StalledRetryTimeout bounds each renewal attempt during such a hold: a proposal that
	// etcd forwarded to a leader that then stopped is lost and never answered, so the next
	// attempt must start soon after etcd has a leader again.
	StalledRetryTimeout = 250 * time.Millisecond
	// StalledDecisionMargin: a renewal that may turn into a stalled hold is cut off this
	// long before the end of the term, so that the keeper learns of the hold before it
	// would remove the VIP at the end of the term.
	StalledDecisionMargin = 50 * time.Millisecond
	// StalledTakeoverDelay is how long a follower whose read of an expired Lease stalled
	// waits before it reads again to take it: two of the holder's retries during a stalled
	// hold, so that the holder renews first once etcd has a leader again. Only while another
	// host answers for the VIP: a holder in a stalled hold does, one whose node was cut does
	// not, and waiting for it would only lengthen the outage.
	StalledTakeoverDelay = 2 * StalledRetryTimeout
	// StalledReadThreshold: a follower's read of an expired Lease that takes longer than
	// this (a read of one object normally takes a few milliseconds) may have waited for
	// etcd's election, and the holder's renewal may be one retry behind it; the follower
	// then waits StalledTakeoverDelay and reads again.
	StalledReadThreshold = 100 * time.Millisecond
	// StalledRetryWait is how long a follower whose prompt read found the Lease expired, while
	// another host still answers for the VIP, waits before it reads again to take it
	// (AnsweredTakeoverDelay): the holder may be in a stalled hold whose next retry starts at
	// most StalledRetryTimeout after the follower's read showed that etcd has a leader again,
	// and 100 ms more leave room for that write to commit. Without it such a follower took the
	// Lease before the holder's retry, and the VIP moved under the guard (bench
	// etcd-leader-cut: up to 167 ms of outage).
	StalledRetryWait = StalledRetryTimeout + 100*time.Millisecond
	// TakeoverRoom is the time a follower's takeover takes after its last read: a probe that
	// finds the VIP answered, the write and the start of the keeper's guard. Only the
	// condition of AnsweredTakeoverDelay uses it.
	TakeoverRoom = 100 * time.Millisecond
)

// Timings are the election and VIP timings of the agent.
type Timings struct {
	// LeaseDuration: followers take over this long after the last renewal they saw.
	LeaseDuration time.Duration
	// RenewDeadline: the leader's term ends this long after the start of its last
	// successful renewal.
	RenewDeadline time.Duration
	// RetryPeriod: the interval of the leader's renewals.
	RetryPeriod time.Duration
	// VIPLifetime: the kernel valid_lft of the VIP, whole seconds.
	VIPLifetime time.Duration
}

// Defaults returns the default timings. RetryPeriod is just above 1/0.95 s so that the
// leader's node stays within one agent request per second (1/1.06 renewals plus 1/20 reads
// of the local etcd member's metrics = 0.99/s; docs/agent.md); SlowWriteRoom separates it
// from RenewDeadline, and LeaseDuration exceeds that by ActiveRemovalLateness and 10 ms, as
// the living holder's rule of Problems requires. The continuity rule then has 820 ms to
// spare (V − R − KernelExpiryEarliness − MinRenewBudget). VIPLifetime outlives
// LeaseDuration, so that the VIP of an agent that died or froze stays on its node until
// the next leader's guard takes over (package doc).
func Defaults() Timings {
	const retry = 1060 * time.Millisecond
	return Timings{
		LeaseDuration: retry + SlowWriteRoom + ActiveRemovalLateness + 10*time.Millisecond,
		RenewDeadline: retry + SlowWriteRoom,
		RetryPeriod:   retry,
		VIPLifetime:   2 * time.Second,
	}
}

// Term is one leader term, from the start of the acquisition or renewal that began it.
type Term struct {
	// Start is when the successful write started (S).
	Start time.Time
	// End is when the term ends unless renewed (S + D): the leader removes the VIP then.
	End time.Time
	// RefreshBy is the latest moment at which the keeper's regular refresh of the VIP's
	// kernel lifetime may complete (S + max(0, L − V)): with V < L, an address refreshed by
	// then runs out by the earliest takeover; with V ≥ L only the refresh at the start of
	// each renewal keeps it, so that a dead holder's VIP lapses as early as it can.
	RefreshBy time.Time
	// EarliestTakeover is the earliest moment at which a follower can take the Lease
	// over (S + L).
	EarliestTakeover time.Time
}

// TermFrom returns the term that a successful write started at start gives.
func (t Timings) TermFrom(start time.Time) Term {
	return Term{
		Start:            start,
		End:              start.Add(t.RenewDeadline),
		RefreshBy:        start.Add(max(0, t.LeaseDuration-t.VIPLifetime)),
		EarliestTakeover: start.Add(t.LeaseDuration),
	}
}

// StalledTerm is term held through stalled renewals: it ends StalledWriteHold later, and
// the VIP may be refreshed until then. It is safe only where the takeover guard protects
// the VIP (docs/agent-reference.md, "Holding through an etcd election"): a follower whose
// takeover commits meanwhile adds the VIP only once this holder stopped answering for it,
// and this holder stops at the conflict its next renewal meets, or at the end of the hold.
func (t Timings) StalledTerm(term Term) Term {
	term.End = term.Start.Add(t.RenewDeadline + StalledWriteHold)
	term.RefreshBy = term.End
	return term
}

// LatestHold is the latest moment at which a living holder can still hold the VIP in the
// term: it removes the VIP itself at the end of the term, within ActiveRemovalLateness.
// (A holder that died or froze holds it until Lapse; the next leader's guard covers that.)
func (t Timings) LatestHold(term Term) time.Time {
	return term.End.Add(ActiveRemovalLateness)
}

// Lapse is when the kernel is expected to have removed the VIP of a holder that died or
// froze in the term with no renewal on the wire: its last refresh, by RefreshBy, plus the
// lifetime and KernelExpiryLateness, that is S + max(L, V) + KernelExpiryLateness. Until
// then that node still serves on the VIP, and the next leader's guard, which probes from
// S + L on, waits for it. A renewal that started at s and never committed moves it to s + V +
// KernelExpiryLateness (package doc, "A renewal on the wire").
func (t Timings) Lapse(term Term) time.Time {
	return term.RefreshBy.Add(t.VIPLifetime + KernelExpiryLateness)
}

// AnsweredTakeoverDelay is how long a follower waits after a prompt read of an expired Lease
// while another host answers for the VIP: StalledRetryWait, where a holder that died or froze
// at the start of its term still serves on the VIP when the follower's guard starts (L +
// StalledRetryWait + TakeoverRoom ≤ V; the guard then waits for that VIP anyway, and the
// delay costs such a crash nothing). Otherwise zero: with V < L (or a long L) the delay would
// lengthen every crash takeover by up to itself, more than the ~0.1–0.2 s a follower that
// races a stalled holder costs in some etcd elections; there the race stays open.
func (t Timings) AnsweredTakeoverDelay() time.Duration {
	if t.LeaseDuration+StalledRetryWait+TakeoverRoom > t.VIPLifetime {
		return 0
	}
	return StalledRetryWait
}

// RenewalRefreshLasts reports whether the refresh at the start of a renewal alone keeps the
// VIP until the next renewal has refreshed it (V covers R, KernelExpiryEarliness and
// MinRenewBudget): a write that completes after RefreshBy then needs no renewal at once.
func (t Timings) RenewalRefreshLasts() bool {
	return t.VIPLifetime-KernelExpiryEarliness >= t.RetryPeriod+MinRenewBudget
}

// Field names the timing a Problem is about.
type Field string

// The timings, named as in the providerConfig; the agent's flags are the same words in
// kebab case.
const (
	FieldLeaseDuration Field = "leaseDuration"
	FieldRenewDeadline Field = "renewDeadline"
	FieldRetryPeriod   Field = "retryPeriod"
	FieldVIPLifetime   Field = "vipLifetime"
)

// Problem is one broken rule.
type Problem struct {
	Field   Field
	Value   time.Duration
	Message string
}

// Problems lists every rule the timings break.
func (t Timings) Problems() []Problem {
	var out []Problem
	if t.RetryPeriod <= 0 {
		out = append(out, Problem{FieldRetryPeriod, t.RetryPeriod, "must be positive"})
	}
	if t.RenewDeadline <= t.RetryPeriod {
		out = append(out, Problem{FieldRenewDeadline, t.RenewDeadline,
			fmt.Sprintf("must be longer than the retry period (%s)", t.RetryPeriod)})
	}
	if t.VIPLifetime < time.Second || t.VIPLifetime%time.Second != 0 {
		out = append(out, Problem{FieldVIPLifetime, t.VIPLifetime, "must be a whole number of seconds, at least 1s"})
		return out
	}
	// The safety rule for a living holder: it has removed the VIP by the earliest takeover.
	// (A takeover adds the VIP only after its Lease write returned and its guard probed, so
	// a hold that ends at the earliest takeover itself is over before the new VIP is on.)
	term := t.TermFrom(time.Time{})
	if t.LatestHold(term).After(term.EarliestTakeover) {
		out = append(out, Problem{FieldLeaseDuration, t.LeaseDuration,
			fmt.Sprintf("must exceed the renew deadline (%s) by more than %s, so that the leader removes the VIP before any follower can take over",
				t.RenewDeadline, ActiveRemovalLateness)})
	}
	// Continuity: the last regular refresh (at the start of the term, or at most a keeper
	// tick before RefreshBy) must last until the next renewal, RetryPeriod after the start
	// of this one, has refreshed it. Checked only when the rules above hold, so that one
	// mistake gives one message. (A lifetime that outlives the lease needs no rule of its
	// own: the next leader's guard waits for a dead holder's VIP; package doc.)
	if len(out) == 0 {
		lastRefresh := term.RefreshBy.Add(-KeeperTick)
		if lastRefresh.Before(term.Start) {
			lastRefresh = term.Start
		}
		lapse := lastRefresh.Add(t.VIPLifetime - KernelExpiryEarliness)
		if budget := lapse.Sub(term.Start.Add(t.RetryPeriod)); budget < MinRenewBudget {
			out = append(out, Problem{FieldRetryPeriod, t.RetryPeriod,
				fmt.Sprintf("must be at most %s, so that a renewal can refresh the VIP before it expires",
					t.RetryPeriod+budget-MinRenewBudget)})
		}
	}
	return out
}
