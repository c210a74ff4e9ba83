// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AcquiredAnnotation carries, as JSON (Acquisition), why the holder took the Lease. The
// acquisition write itself sets it, so that the Lease tells why the VIP moved at no
// request of its own, even when the old holder's logs are out of reach.
const AcquiredAnnotation = "kube-vip-agent.gardener.cloud/acquired"

// The reasons of an acquisition.
const (
	// ReasonRelease: the previous holder released the Lease (it stopped, lost its health,
	// or its term ended with its VIP removed).
	ReasonRelease = "release"
	// ReasonOffer: the previous holder offered the lead (its etcd member leads).
	ReasonOffer = "offer"
	// ReasonExpiry: nobody renewed the Lease for a lease duration (a crash, a frozen node,
	// a partition), or the Lease was new (created at bootstrap or after a deletion).
	ReasonExpiry = "expiry"
	// ReasonEarly: the holder's VIP fell silent on this node's segment for
	// timing.EarlyTakeoverSilence before its term ended (a link cut, a dead node).
	ReasonEarly = "early"
	// ReasonOwnRecord: the Lease still carried this process's own last record.
	ReasonOwnRecord = "own-record"
)

// Reasons are the reasons an Acquisition can carry.
var Reasons = []string{ReasonRelease, ReasonOffer, ReasonExpiry, ReasonEarly, ReasonOwnRecord}

// Acquisition is why a candidate took the Lease, and the evidence: whom it took it from,
// and for an early takeover how long the VIP had been silent and which MAC answered last.
type Acquisition struct {
	Reason         string    `json:"reason"`
	Holder         string    `json:"holder"`
	PreviousHolder string    `json:"previousHolder,omitempty"`
	At             time.Time `json:"at"`
	SilenceMillis  int64     `json:"silenceMs,omitempty"`
	LastHeardMAC   string    `json:"lastHeardMAC,omitempty"`
	// HolderMAC is the MAC of the holder's NIC: followers count only its answers as a sign
	// of life (view.earlyAt).
	HolderMAC string `json:"holderMAC,omitempty"`
}

// String is the acquisition in one sentence, for the Event and the log.
func (a Acquisition) String() string {
	from := "a Lease nobody held"
	if a.PreviousHolder != "" {
		from = fmt.Sprintf("%q", a.PreviousHolder)
	}
	s := fmt.Sprintf("%q took the Lease from %s (%s)", a.Holder, from, a.Reason)
	if a.Reason == ReasonEarly {
		s += fmt.Sprintf(": the VIP was silent for %d ms, last heard from %s", a.SilenceMillis, a.LastHeardMAC)
	}
	return s
}

// AcquisitionOf reads the acquisition recorded in the Lease; ok is false where the holder
// wrote none (upstream kube-vip, an older agent) or the record is another holder's.
func AcquisitionOf(lease *coordinationv1.Lease) (a Acquisition, ok bool) {
	if lease == nil || json.Unmarshal([]byte(lease.Annotations[AcquiredAnnotation]), &a) != nil {
		return Acquisition{}, false
	}
	return a, a.Holder != "" && a.Holder == holderOf(lease)
}

// acquisitionReason classifies a follower's write on the Lease as last seen: early is
// the early takeover's write, expired says the wait for an expiry has passed.
func acquisitionReason(lease *coordinationv1.Lease, identity string, early, expired bool) string {
	if lease == nil {
		return ReasonExpiry
	}
	holder := holderOf(lease)
	switch {
	case early:
		return ReasonEarly
	case !expired && holder == identity:
		return ReasonOwnRecord
	case isRelease(lease):
		return ReasonRelease
	case !expired && holder != "" && lease.Annotations[YieldAnnotation] == holder:
		return ReasonOffer
	}
	return ReasonExpiry
}

// acquisition is the record of the acquisition this follower is about to write at now.
func (e *Elector) acquisition(now time.Time) Acquisition {
	expired := !now.Before(e.observedAt.Add(e.followerWait()))
	a := Acquisition{
		Reason: acquisitionReason(e.observed, e.cfg.Identity, e.takingEarly, expired),
		Holder: e.cfg.Identity, PreviousHolder: holderOf(e.observed), At: now.UTC(), HolderMAC: e.cfg.MAC,
	}
	if a.Reason == ReasonRelease {
		a.PreviousHolder = e.observed.Annotations[ReleasedByAnnotation]
	}
	if a.Reason == ReasonEarly && e.cfg.VIPSilence != nil {
		s := e.cfg.VIPSilence()
		if !s.SilentSince.IsZero() {
			a.SilenceMillis = now.Sub(s.SilentSince).Milliseconds()
		}
		a.LastHeardMAC = s.HeardFrom
	}
	return a
}

// record writes the acquisition into the Lease about to be written.
func (a Acquisition) record(lease *coordinationv1.Lease) {
	raw, err := json.Marshal(a)
	if err != nil {
		return // strings, numbers and a time always marshal
	}
	metav1.SetMetaDataAnnotation(&lease.ObjectMeta, AcquiredAnnotation, string(raw))
}
