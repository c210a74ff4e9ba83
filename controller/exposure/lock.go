// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"sync"
)

// keyedLocks serialises work per key. By an exposure's UID: its reconciliation, its
// deletion and the node tracker's pair sync run in different controllers and would
// otherwise interleave their Neutron writes (e.g. a sync re-adding a pair that the
// deletion just removed). By a cluster's identity: the claims of its front door.
type keyedLocks[K comparable] struct {
	mu    sync.Mutex
	locks map[K]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock blocks until the caller holds the lock of key and returns the function that
// releases it. Entries are dropped when nobody holds or waits for them.
func (l *keyedLocks[K]) lock(key K) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[K]*refMutex{}
	}
	m := l.locks[key]
	if m == nil {
		m = &refMutex{}
		l.locks[key] = m
	}
	m.refs++
	l.mu.Unlock()

	m.Lock()
	return func() {
		m.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if m.refs--; m.refs == 0 {
			delete(l.locks, key)
		}
	}
}
