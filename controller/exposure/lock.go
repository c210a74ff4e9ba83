// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// exposureLocks serialises the work on one exposure: its reconciliation, its deletion and
// the node tracker's pair sync run in different controllers and would otherwise interleave
// their Neutron writes (e.g. a sync re-adding a pair that the deletion just removed).
type exposureLocks struct {
	mu    sync.Mutex
	locks map[types.UID]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock blocks until the caller holds the lock of uid and returns the function that
// releases it. Entries are dropped when nobody holds or waits for them.
func (l *exposureLocks) lock(uid types.UID) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[types.UID]*refMutex{}
	}
	m := l.locks[uid]
	if m == nil {
		m = &refMutex{}
		l.locks[uid] = m
	}
	m.refs++
	l.mu.Unlock()

	m.Lock()
	return func() {
		m.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if m.refs--; m.refs == 0 {
			delete(l.locks, uid)
		}
	}
}
