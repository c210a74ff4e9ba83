// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/utils/clock"
)

// An etcd metrics listener the agent cannot read turns the etcd-leader yield off: that
// must show in a metric and in an error log, not only as etcd_leader 0, which a readable
// follower shows too.
func TestUnreadableEtcdMetricsAreVisible(t *testing.T) {
	_, reg := newRegistry("node-1")
	m := newMetrics(reg, clock.RealClock{})
	var mu sync.Mutex
	var errors []string
	log := funcr.New(func(prefix, args string) {
		if !strings.Contains(args, `"level"`) { // an error; funcr gives every info line a level
			mu.Lock()
			errors = append(errors, args)
			mu.Unlock()
		}
	}, funcr.Options{})
	read := func(url string) {
		t.Helper()
		el, err := newEtcdLeader(Config{EtcdMetricsURL: url, EtcdCheckPeriod: time.Second, HealthTimeout: time.Second},
			m, clock.RealClock{}, log, func() bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		el.Run(ctx)
	}

	etcd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("etcd_server_is_leader 0\n"))
	}))
	read(etcd.URL + "/metrics")
	if got := testutil.ToFloat64(m.etcdReadable); got != 1 {
		t.Fatalf("kube_vip_agent_etcd_metrics_readable is %v after a good read, want 1", got)
	}
	etcd.Close()
	read(etcd.URL + "/metrics")
	if got := testutil.ToFloat64(m.etcdReadable); got != 0 {
		t.Errorf("kube_vip_agent_etcd_metrics_readable is %v while the listener is gone, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errors) == 0 {
		t.Error("no error logged while the etcd metrics listener is gone: the yield is off silently")
	}
}
