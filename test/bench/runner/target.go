// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// etcdLeaderElsewhere returns the node whose etcd member leads, which must not be the
// holder. If the holder's member leads (kube-vip and keepalived do not care; ours moves
// the VIP away soon), the leadership goes to the next node first, so that every system
// is measured on the same fault: a cut that costs the cluster its etcd leader but not the
// VIP holder.
func etcdLeaderElsewhere(ctx context.Context, d *Deployment, holder int) (int, error) {
	leader, _, err := etcdLeaderOff(ctx, d, holder)
	return leader, err
}

// etcdLeaderOff returns the node whose etcd member leads, handing the leadership from the
// holder's member to the next node's first if needed (moved).
func etcdLeaderOff(ctx context.Context, d *Deployment, holder int) (leader int, moved bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		leader, err = etcdLeader(ctx, d.nodes)
		if err == nil && leader != holder {
			if moved {
				// Let the writes that the handover held up settle before the fault.
				time.Sleep(time.Second)
			}
			return leader, moved, nil
		}
		if err == nil && !moved {
			to := d.nodes[(holder+1)%len(d.nodes)]
			if err = d.nodes[holder].EtcdTransferLeadership(ctx, to); err == nil {
				moved = true
			}
		}
		select {
		case <-ctx.Done():
			return -1, moved, fmt.Errorf("no etcd leader other than the holder %s: %w", d.nodes[holder].Name(), errors.Join(err, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// etcdLeaderAtHolder hands etcd's leadership to the holder's member, if another leads, and
// returns the holder: the case the etcd-leader yield avoids in the steady state (a failure
// soon after etcd's leadership came to the holder's node), forced. The fault follows 1 s
// after the handover, before ours can confirm the leadership and yield (health.EtcdLeader's
// Confirm, 5 s).
func etcdLeaderAtHolder(ctx context.Context, d *Deployment, holder int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	transferred := false
	for {
		leader, err := etcdLeader(ctx, d.nodes)
		if err == nil && leader == holder {
			if transferred {
				time.Sleep(time.Second)
			}
			return holder, nil
		}
		if err == nil && !transferred {
			if err = d.nodes[leader].EtcdTransferLeadership(ctx, d.nodes[holder]); err == nil {
				transferred = true
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("etcd's leadership did not come to the holder %s: %w", d.nodes[holder].Name(), errors.Join(err, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// etcdLeader is the index of the node whose etcd member leads.
func etcdLeader(ctx context.Context, nodes []*netns.Node) (int, error) {
	for i, n := range nodes {
		leads, err := n.EtcdLeads(ctx)
		if err != nil {
			return -1, err
		}
		if leads {
			return i, nil
		}
	}
	return -1, errors.New("no etcd member leads")
}
