// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/agent/vip"
)

// An exposure has one VIP per family, held on the same node: the election is per
// exposure, so the keeper sees the VIPs as one address, one announcer and one guard
// (arp.Guards). Each of the types below applies an operation to every VIP, never stopping
// at the first failure, so that a failing family never keeps another one on the NIC or off
// the LAN.

// addresses are the VIPs on the NIC.
type addresses []address

// Ensure adds or refreshes every VIP; added is true if any was missing. If one fails, the
// VIPs that this call added are removed again: the keeper counts the exposure's VIPs as off
// and retries (or gives the lead up), and no family stays on without being announced.
func (as addresses) Ensure() (added bool, err error) {
	var errs []error
	var fresh []address
	for _, a := range as {
		ok, err := a.Ensure()
		if ok {
			fresh = append(fresh, a)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		for _, a := range fresh {
			_, rerr := a.Remove()
			err = errors.Join(err, rerr)
		}
		return false, err
	}
	return len(fresh) > 0, nil
}

// Refresh refreshes every VIP that is there; present is true only if all are, so that a
// missing family sends the exposure back through the guard (the others stay and are
// refreshed, as the guard's add refreshes them again).
func (as addresses) Refresh() (present bool, err error) {
	var errs []error
	present = true
	for _, a := range as {
		ok, err := a.Refresh()
		present = present && ok
		errs = append(errs, err)
	}
	return present, errors.Join(errs...)
}

// Present reports whether every VIP is there (as Refresh: one missing family sends the
// exposure back through the guard).
func (as addresses) Present() (bool, error) {
	var errs []error
	present := true
	for _, a := range as {
		ok, err := a.Present()
		present = present && ok
		errs = append(errs, err)
	}
	return present, errors.Join(errs...)
}

// Remove removes every VIP; removed is true if any was there. The VIPs count as gone only
// if every removal succeeded: otherwise the Lease is not released and the keeper retries
// (the kernel lifetime removes a VIP whose removal keeps failing).
func (as addresses) Remove() (removed bool, err error) {
	var errs []error
	for _, a := range as {
		ok, err := a.Remove()
		removed = removed || ok
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// announcers announce every VIP.
type announcers []announcer

func (as announcers) Announce(ctx context.Context) (int, error) {
	sent := 0
	var errs []error
	for _, a := range as {
		n, err := a.Announce(ctx)
		sent += n
		errs = append(errs, err)
	}
	return sent, errors.Join(errs...)
}

func (as announcers) Close() error {
	var errs []error
	for _, a := range as {
		errs = append(errs, a.Close())
	}
	return errors.Join(errs...)
}

// vipSet is the exposure's VIPs on one interface.
type vipSet struct {
	iface     string
	vips      []netip.Addr
	addrs     []*vip.Address
	announce  announcers
	guard     arp.Guards
	addresses addresses
	probers   []*arp.Prober // the follower's, per VIP (see silence)
}

// newVIPSet opens, for every VIP, its address on iface, its announcer and its guard.
func newVIPSet(iface string, vips []netip.Addr, lifetime time.Duration) (*vipSet, error) {
	s := &vipSet{iface: iface, vips: vips}
	for _, v := range vips {
		addr, err := vip.New(iface, v, lifetime)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.addrs = append(s.addrs, addr)
		s.addresses = append(s.addresses, addr)
		announcer, err := arp.New(iface, v)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.announce = append(s.announce, announcer)
		s.guard = append(s.guard, arp.NewGuard(iface, v))
	}
	return s, nil
}

// answered reports whether another host answers for any of the VIPs now: one verdict of
// takeover guards of their own (the keeper's may be probing), which takes
// timing.TakeoverSilence where nobody answers. A probe that fails or finds no verdict in
// time counts as answered, the careful answer for election.Config.VIPAnswered.
func (s *vipSet) answered(ctx context.Context) bool {
	var gs arp.Guards
	for _, v := range s.vips {
		gs = append(gs, arp.NewGuard(s.iface, v))
	}
	defer func() { _ = gs.Close() }()
	now := time.Now()
	free, holder, err := gs.Free(ctx, now, now.Add(timing.TakeoverSilence+timing.KeeperTick))
	return err != nil || !free || holder != ""
}

// listen adds a follower's prober per VIP; onSilent pokes the election.
func (s *vipSet) listen(onSilent func(), log logr.Logger) {
	for _, v := range s.vips {
		s.probers = append(s.probers, arp.NewProber(s.iface, v, onSilent, log))
	}
}

// runProbers probes every VIP while active reports true, until ctx is done.
func (s *vipSet) runProbers(ctx context.Context, active func() bool) {
	var wg sync.WaitGroup
	for _, p := range s.probers {
		wg.Go(func() { p.Run(ctx, active) })
	}
	wg.Wait()
}

// silence is what the probers heard, as one (election.Config.VIPSilence): the exposure is
// silent only while every family is, since the latest of their silences began, and
// confirmed when every family's is; this node was cut off when any family's prober says so.
func (s *vipSet) silence() election.Silence {
	out := election.Silence{Confirmed: true}
	probing := true
	for i, p := range s.probers {
		if cut := p.CutAt(); cut.After(out.CutAt) {
			out.CutAt = cut
		}
		heard, since, confirmed := p.Silence()
		if heard.After(out.HeardAt) {
			out.HeardAt = heard
			out.HeardFrom, _ = p.Heard(heard)
		}
		probing = probing && !since.IsZero()
		out.Confirmed = out.Confirmed && confirmed
		if i == 0 || since.After(out.SilentSince) {
			out.SilentSince = since
		}
	}
	if !probing || out.SilentSince.IsZero() {
		out.SilentSince, out.Confirmed = time.Time{}, false
	}
	return out
}

// heard is the probers' view for the metrics (followerView): the exposure is heard as
// long as any family is, and the answerers are the most that any family counts.
// The silence is the probers' own, not the one the election trusts after a cut.
func (s *vipSet) heard() (lastHeardSeconds float64, answerers int, probing bool) {
	var since time.Time
	for _, p := range s.probers {
		ps := p.SilentSince()
		if ps.IsZero() {
			return 0, 0, false
		}
		if ps.After(since) {
			since = ps
		}
	}
	if since.IsZero() {
		return 0, 0, false
	}
	now := time.Now()
	for _, p := range s.probers {
		_, n := p.Heard(now)
		answerers = max(answerers, n)
	}
	return now.Sub(since).Seconds(), answerers, true
}

// cutOffs is the probers' view for the metrics (followerView): how often a family's
// prober went deaf to its peers.
func (s *vipSet) cutOffs() int {
	n := 0
	for _, p := range s.probers {
		n += p.CutOffs()
	}
	return n
}

// Present reports whether any VIP is on the interface.
func (s *vipSet) Present() (bool, error) {
	for _, a := range s.addrs {
		if ok, err := a.Present(); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// Close releases every socket.
func (s *vipSet) Close() {
	_ = s.announce.Close()
	_ = s.guard.Close()
	for _, a := range s.addrs {
		a.Close()
	}
}

// detectInterface picks one interface for all the VIPs: the one that --interface names,
// else the one DetectInterface finds for each, which must be the same.
func detectInterface(configured string, vips []netip.Addr) (string, error) {
	if configured != "" {
		return configured, nil
	}
	found := ""
	for _, v := range vips {
		iface, err := vip.DetectInterface(v)
		if err != nil {
			return "", err
		}
		if found != "" && iface != found {
			return "", fmt.Errorf("the VIPs belong on different interfaces (%s on %s, %s on %s); set --interface", vips[0], found, v, iface)
		}
		found = iface
	}
	return found, nil
}
