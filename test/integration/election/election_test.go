// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package election_test runs the agent's Lease election against a real kube-apiserver:
// several candidates in one process, each with its own client that the test can cut off
// (a crash or a partition, as the API server sees it).
package election_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The agent's default timings: the election is tested as it ships.
var (
	leaseDuration = timing.Defaults().LeaseDuration
	retryPeriod   = timing.Defaults().RetryPeriod
)

// cuttable wraps a LeaseClient; once cut, every call fails as if the API server were gone.
type cuttable struct {
	election.LeaseClient
	cut   atomic.Bool
	calls atomic.Int64
	// beforeRelease, when set, runs once before an update that releases the Lease.
	beforeRelease atomic.Pointer[func()]
	// lateReply, when set, makes the next update reach the API server but answer only
	// after the caller's deadline, as over a slow network or from a slow etcd; it stores
	// when that update was sent.
	lateReply atomic.Pointer[time.Time]
	// aheadWatch, when set, makes the next watch ask for a resourceVersion far ahead of the
	// API server's, as after an etcd restore that moved the revisions backwards.
	aheadWatch atomic.Bool
}

var errCut = errors.New("connection refused (cut by the test)")

func (c *cuttable) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	if c.cut.Load() {
		return nil, errCut
	}
	return c.LeaseClient.Get(ctx, name, o)
}

func (c *cuttable) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	if c.cut.Load() {
		return nil, errCut
	}
	return c.LeaseClient.Create(ctx, l, o)
}

func (c *cuttable) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	if c.cut.Load() {
		return nil, errCut
	}
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "" {
		if f := c.beforeRelease.Swap(nil); f != nil {
			(*f)()
		}
	}
	if sent := c.lateReply.Swap(nil); sent != nil {
		*sent = time.Now()
		if _, err := c.LeaseClient.Update(ctx, l, o); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.LeaseClient.Update(ctx, l, o)
}

func (c *cuttable) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	if rv, err := strconv.ParseUint(o.ResourceVersion, 10, 64); err == nil && c.aheadWatch.Swap(false) {
		o.ResourceVersion = strconv.FormatUint(rv+1000000, 10)
	}
	return c.LeaseClient.Watch(ctx, o)
}

// term is one leadership term as the candidate saw it: from the acquisition until the
// end of the validity it was granted, or until it stopped leading, whichever came first.
type term struct {
	who        string
	start, end time.Time
}

// recorder collects the terms of all candidates.
type recorder struct {
	mu     sync.Mutex
	open   map[string]*term
	closed []term
}

func (r *recorder) callbacks(who string) election.Callbacks {
	return election.Callbacks{
		OnLeading: func(lt timing.Term, newTerm bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if newTerm || r.open[who] == nil {
				r.open[who] = &term{who: who, start: time.Now()}
			}
			r.open[who].end = lt.End
		},
		OnStoppedLeading: func(string) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			if t := r.open[who]; t != nil {
				if now := time.Now(); now.Before(t.end) {
					t.end = now
				}
				r.closed = append(r.closed, *t)
				delete(r.open, who)
			}
			return true
		},
	}
}

func (r *recorder) leaders() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	now := time.Now()
	for who, t := range r.open {
		if now.Before(t.end) {
			out = append(out, who)
		}
	}
	return out
}

// assertNoOverlap checks the safety property: no two candidates were ever leader at the
// same instant.
func (r *recorder) assertNoOverlap(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	all := append([]term(nil), r.closed...)
	for _, o := range r.open {
		all = append(all, *o)
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			a, b := all[i], all[j]
			if a.who != b.who && a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("terms overlap: %s [%s, %s] and %s [%s, %s]", a.who, a.start.Format("15:04:05.000"),
					a.end.Format("15:04:05.000"), b.who, b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000"))
			}
		}
	}
}

type candidate struct {
	name   string
	client *cuttable
	cancel context.CancelFunc
	done   chan struct{}
}

func startCandidates(t *testing.T, cfg *rest.Config, lease string, rec *recorder, n int) []*candidate {
	t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		names = append(names, fmt.Sprintf("node-%d", i))
	}
	return startCandidatesWith(t, cfg, lease, rec, names, nil)
}

// startCandidatesWith is startCandidates with the given names and prepare run on each
// candidate's client before its election starts.
func startCandidatesWith(t *testing.T, cfg *rest.Config, lease string, rec *recorder, names []string, prepare func(*cuttable)) []*candidate {
	t.Helper()
	var out []*candidate
	for _, name := range names {
		base, err := election.NewLeaseClient(cfg, "default")
		if err != nil {
			t.Fatal(err)
		}
		c := &candidate{name: name, client: &cuttable{LeaseClient: base}, done: make(chan struct{})}
		if prepare != nil {
			prepare(c.client)
		}
		e, err := election.New(election.Config{
			Leases: c.client, Name: lease, Identity: name,
			Timings:   timing.Defaults(),
			Callbacks: rec.callbacks(name), Log: testr.New(t).WithName(name),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		go func() {
			defer close(c.done)
			_ = e.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-c.done })
		out = append(out, c)
	}
	return out
}

func waitForOneLeader(t *testing.T, rec *recorder, timeout time.Duration, not string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if l := rec.leaders(); len(l) == 1 && l[0] != not {
			return l[0], time.Since(start)
		} else if len(l) > 1 {
			t.Fatalf("two leaders at once: %v", l)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no single leader (other than %q) within %s: %v", not, timeout, rec.leaders())
	return "", 0
}

// stopAndAssertHandover stops the leader gracefully (it releases the Lease on the way
// out) and checks that another candidate takes over without waiting for the expiry.
func stopAndAssertHandover(t *testing.T, rec *recorder, leader *candidate) {
	t.Helper()
	leader.cancel()
	<-leader.done
	next, took := waitForOneLeader(t, rec, 3*time.Second, leader.name)
	t.Logf("handover %s -> %s in %s", leader.name, next, took)
	// Watch-driven: far below a lease duration (about 10ms here; the bound is generous for
	// a loaded CI machine, and still half of what waiting for expiry would take).
	if took > leaseDuration/2 {
		t.Errorf("handover took %s; a released Lease must be taken without waiting for expiry (%s)", took, leaseDuration)
	}
}

func find(cs []*candidate, name string) *candidate {
	for _, c := range cs {
		if c.name == name {
			return c
		}
	}
	return nil
}

func TestElection(t *testing.T) {
	cp := framework.StartControlPlane(t)
	cfg := cp.Config

	t.Run("one leader, quick handover on release", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		cs := startCandidates(t, cfg, "handover", rec, 3)
		leader, _ := waitForOneLeader(t, rec, 10*time.Second, "")

		stopAndAssertHandover(t, rec, find(cs, leader))
		rec.assertNoOverlap(t)
	})

	t.Run("a release that meets a newer Lease version still hands over at once", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		cs := startCandidates(t, cfg, "stale-release", rec, 3)
		leader, _ := waitForOneLeader(t, rec, 10*time.Second, "")
		// As when SIGTERM cuts a renewal short that still reaches the API server: the
		// Lease changes after the leader last saw it, so its release meets a conflict.
		raw, err := election.NewLeaseClient(cfg, "default")
		if err != nil {
			t.Fatal(err)
		}
		bump := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l, err := raw.Get(ctx, "stale-release", metav1.GetOptions{})
			if err == nil {
				now := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &now
				_, err = raw.Update(ctx, l, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("changing the Lease under the leader: %v", err)
			}
		}
		find(cs, leader).client.beforeRelease.Store(&bump)
		stopAndAssertHandover(t, rec, find(cs, leader))
		if find(cs, leader).client.beforeRelease.Load() != nil {
			t.Fatal("the leader never tried to release the Lease")
		}
		rec.assertNoOverlap(t)
	})

	t.Run("an acquisition that commits after its deadline is taken back at once", func(t *testing.T) {
		// The API server stores renewTime to the microsecond; the candidate must recognise
		// the record it wrote when the watch shows it, not wait a lease duration for itself.
		rec := &recorder{open: map[string]*term{}}
		var sent time.Time
		cs := startCandidatesWith(t, cfg, "late-acquisition", rec, []string{"node-0"}, func(c *cuttable) { c.lateReply.Store(&sent) })
		waitForOneLeader(t, rec, 10*time.Second, "")
		if cs[0].client.lateReply.Load() != nil {
			t.Fatal("the candidate never tried to acquire the Lease")
		}
		took := time.Since(sent)
		t.Logf("leading %s after the acquisition was sent; its reply was lost at %s", took, retryPeriod)
		// The write's deadline is a retry period; the candidate then sees its own record and
		// renews at once. Waiting for its own record to expire would add a lease duration.
		if took > retryPeriod+leaseDuration/3 {
			t.Errorf("leading %s after an acquisition whose reply came after its deadline (%s); want at most %s: the candidate did not recognise its own record",
				took, retryPeriod, retryPeriod+leaseDuration/3)
		}
	})

	t.Run("a watch whose resourceVersion is ahead of the API server is started again from a read", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		cs := startCandidates(t, cfg, "ahead", rec, 1)
		waitForOneLeader(t, rec, 10*time.Second, "")
		follower := startCandidatesWith(t, cfg, "ahead", rec, []string{"node-1"}, func(c *cuttable) { c.aheadWatch.Store(true) })[0]
		// The API server answers a watch from the future after about 3 s ("Too large
		// resource version"); give the follower that and a re-read.
		time.Sleep(3*time.Second + 3*retryPeriod)
		if follower.client.aheadWatch.Load() {
			t.Fatal("the follower never watched")
		}
		before := follower.client.calls.Load()
		const window = 5 * time.Second
		time.Sleep(window)
		calls := follower.client.calls.Load() - before
		t.Logf("the follower sent %d Lease requests in %s", calls, window)
		// A follower with a working watch sends nothing; one without learns of the
		// leader's renewals only through its own takeover attempts (a write and a read
		// per lease duration).
		if calls > 0 {
			t.Errorf("the follower sent %d Lease requests in %s: its watch is stuck, it sees the Lease only through its own failed takeovers", calls, window)
		}
		stopAndAssertHandover(t, rec, cs[0])
		rec.assertNoOverlap(t)
	})

	t.Run("a cut-off leader is replaced only after its term ended", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		cs := startCandidates(t, cfg, "crash", rec, 3)
		leader, _ := waitForOneLeader(t, rec, 10*time.Second, "")
		// Let a few renewals happen, then cut the leader off.
		time.Sleep(2 * retryPeriod)
		find(cs, leader).client.cut.Store(true)
		next, took := waitForOneLeader(t, rec, 5*time.Second, leader)
		t.Logf("takeover %s -> %s after %s", leader, next, took)
		rec.assertNoOverlap(t)
		if took > leaseDuration+time.Second {
			t.Errorf("takeover after %s, want about a lease duration (%s)", took, leaseDuration)
		}
		// Healing the partition must not produce a second leader.
		find(cs, leader).client.cut.Store(false)
		time.Sleep(3 * retryPeriod)
		if l := rec.leaders(); len(l) != 1 || l[0] != next {
			t.Errorf("after healing: leaders %v, want only %s", l, next)
		}
		rec.assertNoOverlap(t)
	})

	t.Run("a deleted Lease never yields two leaders", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		startCandidates(t, cfg, "deleted", rec, 3)
		leader, _ := waitForOneLeader(t, rec, 10*time.Second, "")
		time.Sleep(retryPeriod)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoordinationV1().Leases("default").Delete(context.Background(), "deleted", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * leaseDuration)
		if l := rec.leaders(); len(l) != 1 {
			t.Errorf("after deleting the Lease (leader was %s): leaders %v, want exactly one", leader, l)
		}
		rec.assertNoOverlap(t)
	})

	t.Run("steady state costs about one request per retry period", func(t *testing.T) {
		rec := &recorder{open: map[string]*term{}}
		cs := startCandidates(t, cfg, "steady", rec, 3)
		waitForOneLeader(t, rec, 10*time.Second, "")
		time.Sleep(retryPeriod)
		var before int64
		for _, c := range cs {
			before += c.client.calls.Load()
		}
		const window = 9 * time.Second
		time.Sleep(window)
		var after int64
		for _, c := range cs {
			after += c.client.calls.Load()
		}
		rate := float64(after-before) / window.Seconds()
		t.Logf("%d Lease requests in %s: %.2f/s for 3 candidates", after-before, window, rate)
		// Only the leader's renewals: 1/0.9s. Followers watch and send nothing.
		if rate > 1.5 {
			t.Errorf("%.2f requests/s, want about %.2f (followers must not poll)", rate, 1/retryPeriod.Seconds())
		}
		rec.assertNoOverlap(t)
	})
}
