// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// observation is one version of the Lease; authoritative when it is the result of a read
// or write of this candidate, not a watch event.
type observation struct {
	lease         *coordinationv1.Lease
	authoritative bool
}

// watch feeds every version of the Lease into events until ctx is done. The
// RetryWatcher re-establishes the watch from the last resourceVersion; when that version
// is too old, or too large ("Too large resource version", which the RetryWatcher would
// retry forever), the Lease is read again and the watch starts over; a read that finds a
// record the watch missed restarts it from there (rewatchIfBehind).
func (e *Elector) watch(ctx context.Context, resourceVersion string, events chan<- observation) {
	selector := fields.OneTermEqualSelector("metadata.name", e.cfg.Name).String()
	for ctx.Err() == nil {
		retryCtx, giveUp := context.WithCancel(ctx)
		lw := &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
				options.FieldSelector = selector
				w, err := e.cfg.Leases.Watch(ctx, options)
				if err != nil {
					if tooLargeResourceVersion(err) {
						giveUp()
					}
					return nil, err
				}
				return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
					if ev.Type == watch.Error && tooLargeResourceVersion(apierrors.FromObject(ev.Object)) {
						giveUp()
					}
					return ev, true
				}), nil
			},
		}
		w, err := watchtools.NewRetryWatcherWithContext(retryCtx, resourceVersion, lw)
		if err != nil {
			giveUp()
			e.log.Error(err, "Watching the Lease failed")
			return
		}
		rewatched := false
	receive:
		for {
			var ev watch.Event
			select {
			case rv := <-e.rewatch:
				// A read found a newer record than this watch delivered (rewatchIfBehind).
				resourceVersion, rewatched = rv, true
				break receive
			case got, ok := <-w.ResultChan():
				if !ok {
					break receive
				}
				ev = got
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if lease, ok := ev.Object.(*coordinationv1.Lease); ok {
					resourceVersion = lease.ResourceVersion
					select {
					case events <- observation{lease: lease}:
					case <-ctx.Done():
					}
				}
			case watch.Deleted:
				// An empty Lease without a resourceVersion tells the loop that it is gone.
				select {
				case events <- observation{lease: &coordinationv1.Lease{}}:
				case <-ctx.Done():
				}
			case watch.Error:
				e.log.V(1).Info("Lease watch ended", "status", apierrors.FromObject(ev.Object).Error())
			}
		}
		w.Stop()
		giveUp()
		if ctx.Err() != nil {
			return
		}
		if rewatched {
			e.log.Info("The Lease watch missed a newer record; watching again from it", "resourceVersion", resourceVersion)
			continue
		}
		// The watch gave up (typically: resourceVersion too old, after the API server
		// restarted, or too large). Wait a retry period, so that a watch that keeps failing does not spin,
		// then start from a fresh read.
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(e.cfg.Timings.RetryPeriod):
		}
		for ctx.Err() == nil {
			lease, err := e.get(ctx)
			if err == nil {
				resourceVersion = lease.ResourceVersion
				select {
				case events <- observation{lease: lease, authoritative: true}:
				case <-ctx.Done():
				}
				break
			}
			if apierrors.IsNotFound(err) {
				select {
				case events <- observation{lease: &coordinationv1.Lease{}, authoritative: true}:
				case <-ctx.Done():
				}
			}
			select {
			case <-ctx.Done():
			case <-e.clock.After(e.cfg.Timings.RetryPeriod):
			}
		}
	}
}

// observe records a version of the Lease. A watch event older than the version already
// seen (one that trails our own update) is ignored; the result of a read or write is
// adopted whatever its resourceVersion, so that revisions that went backwards (an etcd
// restore) cannot make every candidate ignore the real Lease.
func (e *Elector) observe(lease *coordinationv1.Lease, authoritative bool) {
	if lease.ResourceVersion == "" {
		// Deleted. Who held it is unknown now, so the deletion counts as a change of the
		// record: nobody takes over before a lease duration has passed. A repeated
		// notice of a deletion already known does not restart that wait.
		if e.observed != nil || e.observedAt.IsZero() {
			e.observedAt = e.clock.Now()
		}
		e.observed = nil
		e.noteHolder("")
		return
	}
	e.createRefused = false
	if !authoritative && e.observed != nil && olderThan(lease.ResourceVersion, e.observed.ResourceVersion) {
		return
	}
	if e.observed == nil || !sameRecord(&e.observed.Spec, &lease.Spec) {
		e.observedAt = e.clock.Now()
		e.releaseSeen = isRelease(lease)
	}
	e.observed = lease
	e.noteHolder(holderOf(lease))
}

func (e *Elector) noteHolder(holder string) {
	if holder == e.lastHolder {
		return
	}
	e.lastHolder, e.holderSeenAt = holder, e.clock.Now()
	if e.cfg.Callbacks.OnNewLeader != nil {
		e.cfg.Callbacks.OnNewLeader(holder)
	}
}

// rewatchIfBehind restarts the watch from lease when a follower's read finds a record it
// has not seen: the follower reached the end of its wait, so the watch delivered no change
// for a lease duration, yet the Lease changed. An API server whose data is behind the
// resourceVersion watched (after an etcd restore, or an API server whose cache lags) keeps
// such a watch open without events (kube-apiserver 1.36) or fails it with "Too large
// resource version", which the RetryWatcher retries forever; either way the follower would
// see the Lease only through its own takeover attempts.
func (e *Elector) rewatchIfBehind(lease *coordinationv1.Lease) {
	if e.observed == nil || sameRecord(&e.observed.Spec, &lease.Spec) {
		return
	}
	select {
	case e.rewatch <- lease.ResourceVersion:
	default:
	}
}

// tooLargeResourceVersion reports whether err says that the resourceVersion asked for is
// newer than what the API server has (k8s.io/apiserver's storage.IsTooLargeResourceVersion,
// which the agent does not link).
func tooLargeResourceVersion(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// olderThan compares resourceVersions. They are opaque to clients in general, but the
// kube-apiserver serves etcd revisions; anything that is not a number is never "older".
func olderThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}
