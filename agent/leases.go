// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
)

// apiSignals receives what the election's own requests tell about the local API server.
type apiSignals interface {
	// Served: the API server served a request.
	Served()
	// ProbeNow: a connection broke or a request failed without an answer; probe at once.
	ProbeNow()
}

// reportingLeases is a LeaseClient that tells the health monitor what its requests saw: a
// dying kube-apiserver closes the watch and fails the renewal at once, long before a
// periodic probe would notice, and a served Lease write makes a probe unnecessary.
type reportingLeases struct {
	election.LeaseClient
	signals apiSignals
}

func (r *reportingLeases) report(err error) {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		r.signals.Served()
	case apierrors.IsConflict(err), apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err):
		r.signals.Served() // an answer from a serving API server
	case !errors.As(err, &status):
		r.signals.ProbeNow() // no answer: transport error or timeout
	}
}

func (r *reportingLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	l, err := r.LeaseClient.Get(ctx, name, opts)
	r.report(err)
	return l, err
}

func (r *reportingLeases) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	l, err := r.LeaseClient.Create(ctx, lease, opts)
	r.report(err)
	return l, err
}

func (r *reportingLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	l, err := r.LeaseClient.Update(ctx, lease, opts)
	r.report(err)
	return l, err
}

// Watch reports a watch that ends while its context is still live: the connection broke.
func (r *reportingLeases) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.LeaseClient.Watch(ctx, opts)
	if err != nil {
		r.report(err)
		return nil, err
	}
	out := make(chan watch.Event)
	go func() {
		defer close(out)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Error {
				// The API server delivered a change: it serves and reaches etcd. On a
				// follower, the leader's renewals arriving this way replace the probes.
				r.signals.Served()
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				w.Stop()
				return
			}
		}
		if ctx.Err() == nil {
			r.signals.ProbeNow()
		}
	}()
	return &forwardedWatch{Interface: w, events: out}, nil
}

type forwardedWatch struct {
	watch.Interface
	events chan watch.Event
}

func (f *forwardedWatch) ResultChan() <-chan watch.Event { return f.events }
