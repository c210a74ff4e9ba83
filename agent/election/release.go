// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// releaseTimeout bounds the release of the Lease on the way out; where other
// kube-apiservers can take the release, the local one gets localReleaseTimeout of it.
const (
	releaseTimeout      = 400 * time.Millisecond
	localReleaseTimeout = releaseTimeout / 2
)

// stopLeading ends the term; with release, the Lease is handed back so that a follower
// takes over without waiting for it to expire.
func (e *Elector) stopLeading(reason string, release bool) {
	e.leading, e.renewLate = false, false
	e.stalledSince.Store(0)
	e.log.Info("Stopped leading", "reason", reason)
	if e.cfg.Callbacks.OnStoppedLeading != nil && !e.cfg.Callbacks.OnStoppedLeading(reason) {
		e.log.Info("Not releasing the Lease: the leader's resources could not be removed; it will expire")
		return
	}
	if release {
		e.release()
	}
}

// release hands the Lease back, bounded in time: an unreachable API server must not hold
// up a shutdown, and the Lease then simply expires. A conflict means the Lease changed
// since it was last seen, typically because a renewal that was cut short by the shutdown
// still reached the API server; the Lease is read again and released if it still names
// this candidate.
//
// When the write through the local kube-apiserver fails otherwise (it died: the usual
// reason to step down), the release goes through each of Config.Fallbacks in turn, within
// the same time bound.
func (e *Elector) release() {
	if e.observed == nil || holderOf(e.observed) != e.cfg.Identity {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	var fallbacks []LeaseClient
	if e.cfg.Fallbacks != nil {
		fallbacks = e.cfg.Fallbacks()
	}
	local, cancelLocal := ctx, context.CancelFunc(func() {})
	if len(fallbacks) > 0 {
		// A local kube-apiserver that hangs (its etcd is gone) must leave the others time.
		local, cancelLocal = context.WithTimeout(ctx, localReleaseTimeout)
	}
	err := e.releaseVia(local, e.cfg.Leases)
	cancelLocal()
	via := "the local kube-apiserver"
	for i := 0; err != nil && !errors.Is(err, errNotHolder) && !apierrors.IsConflict(err) && i < len(fallbacks) && ctx.Err() == nil; i++ {
		e.log.V(1).Info("Releasing the Lease failed; trying another kube-apiserver", "error", err.Error())
		err = e.releaseVia(ctx, fallbacks[i])
		via = fmt.Sprintf("kube-apiserver %d of %d", i+1, len(fallbacks))
	}
	switch {
	case err == nil:
		e.log.Info("Released the Lease", "via", via)
	case errors.Is(err, errNotHolder):
		e.log.Info("Not releasing the Lease: it names another holder now", "holder", holderOf(e.observed))
	default:
		e.log.Info("Releasing the Lease failed; it will expire", "error", err.Error())
	}
}

// releaseVia writes the release record through leases.
func (e *Elector) releaseVia(ctx context.Context, leases LeaseClient) error {
	current := e.observed
	// The result of the last attempt, not RetryOnConflict's: that reports a timed-out
	// attempt (context.DeadlineExceeded) as success when no conflict came before it.
	var last error
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		last = e.releaseOnce(ctx, leases, &current)
		return last
	})
	return last
}

// releaseOnce is one attempt of releaseVia; after a conflict it reads the Lease into
// current for the next attempt.
func (e *Elector) releaseOnce(ctx context.Context, leases LeaseClient, current **coordinationv1.Lease) error {
	lease := (*current).DeepCopy()
	now := metav1.NewMicroTime(e.clock.Now())
	empty := ""
	one := int32(1)
	lease.Spec.HolderIdentity = &empty
	lease.Spec.LeaseDurationSeconds = &one
	lease.Spec.RenewTime = &now
	lease.Spec.AcquireTime = &now
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	delete(lease.Annotations, LeaseDurationAnnotation)
	delete(lease.Annotations, YieldAnnotation)
	lease.Annotations[ReleasedByAnnotation] = e.cfg.Identity
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err == nil {
		e.observe(updated, true)
		return nil
	}
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh, gerr := leases.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if gerr != nil {
		return gerr
	}
	e.observe(fresh, true)
	if holderOf(fresh) != e.cfg.Identity {
		return errNotHolder
	}
	*current = fresh
	return err
}

// errNotHolder ends a release when the Lease no longer names this candidate.
var errNotHolder = errors.New("the Lease names another holder")

func (e *Elector) shutdown() {
	if e.leading {
		e.stopLeading("shutting down", true)
	}
}
