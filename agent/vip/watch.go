// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// LinkWatch configures WatchLink.
type LinkWatch struct {
	// OnChange receives the interface's usability: first its state when the watch starts,
	// then every change. It runs in a goroutine of its own and may block; the kernel's
	// messages are read meanwhile, and only the latest state is delivered.
	OnChange func(up bool)
	// OnRestart receives the error that ended a subscription (typically ENOBUFS: the
	// kernel dropped messages because the socket's buffer overflowed during a burst of
	// link events). The watch then subscribes again and lists the links afresh, so no
	// change is lost for good. May be nil.
	OnRestart func(error)
	// ReceiveBuffer is the socket's receive buffer in bytes; 0 means DefaultLinkWatchBuffer.
	ReceiveBuffer int
	// Namespace is the network namespace to watch; nil means the process's own, which
	// is the agent's. A renewed subscription runs on another thread than the first, so a
	// caller whose thread alone has entered a namespace must name it here (entering it
	// again needs CAP_SYS_ADMIN, which the agent's pod does not have).
	Namespace *netns.NsHandle
}

// DefaultLinkWatchBuffer is the link watch's receive buffer: room for a few thousand link
// messages, a burst of pod teardowns on a busy node.
const DefaultLinkWatchBuffer = 1 << 20

// linkResubscribeDelay paces new subscriptions after one ended or failed.
const linkResubscribeDelay = 100 * time.Millisecond

// WatchLink reports the interface's usability to w.OnChange until done is closed.
func (a *Address) WatchLink(done <-chan struct{}, w LinkWatch) error {
	if w.ReceiveBuffer == 0 {
		w.ReceiveBuffer = DefaultLinkWatchBuffer
	}
	force := true
	subscribe := func() (subscription[netlink.LinkUpdate], error) {
		return subscribeLinks(w.Namespace, w.ReceiveBuffer, &force)
	}
	sub, err := subscribe()
	if err != nil {
		return fmt.Errorf("subscribing to link updates: %w", err)
	}

	var latest atomic.Int32 // 0 unknown, 1 down, 2 up
	changed := make(chan struct{}, 1)
	go func() { // delivery: may block in OnChange without stalling the reader
		last := int32(0)
		for {
			select {
			case <-done:
				return
			case <-changed:
			}
			if v := latest.Load(); v != last {
				last = v
				w.OnChange(v == 2)
			}
		}
	}()
	handle := func(u netlink.LinkUpdate) {
		// By name: an interface created again under the same name has a new index.
		if u.Attrs().Name != a.name {
			return
		}
		v := int32(1)
		if linkUsable(u.Attrs()) {
			v = 2
		}
		latest.Store(v)
		signal(changed)
	}
	// A renewed subscription lists the links again, so nothing more to do after it.
	go readUpdates(done, sub, subscribe, handle, w.OnRestart, func() {}, "link")
	return nil
}

// AddressWatch configures WatchRemoval.
type AddressWatch struct {
	// OnRemoved is called when the kernel reports the VIP removed from an interface, and
	// after a subscription was renewed (a removal may have been missed meanwhile): the
	// caller checks what is on the NIC. It runs in a goroutine of its own and may block;
	// calls that come meanwhile are merged into one.
	OnRemoved func()
	// OnRestart receives the error that ended a subscription (ENOBUFS after a burst of
	// address changes; kube-proxy in IPVS mode changes many). May be nil.
	OnRestart func(error)
	// ReceiveBuffer is the socket's receive buffer in bytes; 0 means DefaultLinkWatchBuffer.
	ReceiveBuffer int
	// Namespace: as LinkWatch.Namespace.
	Namespace *netns.NsHandle
}

// WatchRemoval tells w.OnRemoved when the VIP goes, whoever removed it (by hand, the
// kernel's lifetime, this process), until done is closed. It costs a socket and nothing
// while no address of the namespace changes: the kernel sends every change of an address
// and the watch drops all but the VIP's removals. The existing addresses are not listed (a
// dump's end is not reported through the subscription); the caller checks after a renewal.
func (a *Address) WatchRemoval(done <-chan struct{}, w AddressWatch) error {
	if w.ReceiveBuffer == 0 {
		w.ReceiveBuffer = DefaultLinkWatchBuffer
	}
	force := true
	subscribe := func() (subscription[netlink.AddrUpdate], error) {
		return subscribeAddrs(w.Namespace, w.ReceiveBuffer, &force)
	}
	sub, err := subscribe()
	if err != nil {
		return fmt.Errorf("subscribing to address updates: %w", err)
	}
	removed := make(chan struct{}, 1)
	go func() { // delivery: may block in OnRemoved without stalling the reader
		for {
			select {
			case <-done:
				return
			case <-removed:
			}
			w.OnRemoved()
		}
	}()
	handle := func(u netlink.AddrUpdate) {
		// Any interface: a removal elsewhere costs one check, and the VIP's interface may
		// have been created again under a new index.
		if ip, ok := netip.AddrFromSlice(u.LinkAddress.IP); !u.NewAddr && ok && ip.Unmap() == a.vip {
			signal(removed)
		}
	}
	go readUpdates(done, sub, subscribe, handle, w.OnRestart, func() { signal(removed) }, "address")
	return nil
}

// signal wakes a delivery goroutine without blocking; signals that come meanwhile merge.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscription is one netlink subscription: updates is closed when it ends, closing stop
// releases its socket, lastErr holds the last error it reported.
type subscription[U any] struct {
	updates <-chan U
	stop    chan struct{}
	lastErr *lastError
}

// readUpdates hands every update to handle until done is closed. A subscription that ends
// is renewed, linkResubscribeDelay apart, and then renewed is called.
func readUpdates[U any](done <-chan struct{}, sub subscription[U], subscribe func() (subscription[U], error),
	handle func(U), onRestart func(error), renewed func(), what string) {
	for {
		for u := range sub.updates {
			handle(u)
		}
		close(sub.stop)
		select {
		case <-done:
			return
		default:
		}
		if onRestart != nil {
			onRestart(sub.lastErr.get())
		}
		for {
			select {
			case <-done:
				return
			case <-time.After(linkResubscribeDelay):
			}
			var err error
			if sub, err = subscribe(); err == nil {
				break
			}
			if onRestart != nil {
				onRestart(fmt.Errorf("subscribing to %s updates again: %w", what, err))
			}
		}
		renewed()
	}
}

// subscribeLinks subscribes to the link messages of the namespace and asks for a dump of
// the existing links, so that the first messages give the current state; ns, if not nil,
// names the namespace (see LinkWatch.Namespace). force says whether to force the buffer
// size past net.core.rmem_max; it is cleared for good when that is not permitted.
func subscribeLinks(ns *netns.NsHandle, buffer int, force *bool) (subscription[netlink.LinkUpdate], error) {
	updates := make(chan netlink.LinkUpdate, 64)
	sub := subscription[netlink.LinkUpdate]{updates: updates, stop: make(chan struct{}), lastErr: &lastError{}}
	err := withForcedBuffer(force, func(force bool) error {
		return netlink.LinkSubscribeWithOptions(updates, sub.stop, netlink.LinkSubscribeOptions{
			Namespace: ns, ErrorCallback: sub.lastErr.set, ListExisting: true,
			ReceiveBufferSize: buffer, ReceiveBufferForceSize: force,
		})
	})
	if err != nil {
		close(sub.stop)
		return sub, err
	}
	return sub, nil
}

// subscribeAddrs subscribes to the IPv4 and IPv6 address messages of the namespace, as
// subscribeLinks does to the links, without a dump.
func subscribeAddrs(ns *netns.NsHandle, buffer int, force *bool) (subscription[netlink.AddrUpdate], error) {
	updates := make(chan netlink.AddrUpdate, 64)
	sub := subscription[netlink.AddrUpdate]{updates: updates, stop: make(chan struct{}), lastErr: &lastError{}}
	err := withForcedBuffer(force, func(force bool) error {
		return netlink.AddrSubscribeWithOptions(updates, sub.stop, netlink.AddrSubscribeOptions{
			Namespace: ns, ErrorCallback: sub.lastErr.set,
			ReceiveBufferSize: buffer, ReceiveBufferForceSize: force,
		})
	})
	if err != nil {
		close(sub.stop)
		return sub, err
	}
	return sub, nil
}

// withForcedBuffer subscribes, forcing the receive buffer past net.core.rmem_max while
// *force allows. That needs CAP_NET_ADMIN; without it the subscription takes what the
// sysctl allows, from now on (the library leaks the socket of a subscription whose buffer
// could not be set, so this is tried once).
func withForcedBuffer(force *bool, subscribe func(force bool) error) error {
	err := subscribe(*force)
	if *force && errors.Is(err, unix.EPERM) {
		*force = false
		err = subscribe(false)
	}
	return err
}

// lastError keeps the last error a subscription reported; its callback runs in the
// subscription's goroutine.
type lastError struct {
	mu  sync.Mutex
	err error
}

func (l *lastError) set(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

func (l *lastError) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		return errors.New("the subscription ended")
	}
	return l.err
}
