// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// namespace is one named network namespace with a netlink handle bound to it.
type namespace struct {
	name   string
	handle vnetns.NsHandle
	nl     *netlink.Handle
}

func openNamespace(name string) (*namespace, error) {
	h, err := vnetns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("opening namespace %s: %w", name, err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("netlink handle in namespace %s: %w", name, err)
	}
	return &namespace{name: name, handle: h, nl: nl}, nil
}

func (ns *namespace) close() {
	if ns == nil {
		return
	}
	if ns.nl != nil {
		ns.nl.Close()
	}
	_ = ns.handle.Close()
}

// do runs fn on a goroutine whose OS thread has entered the namespace. The thread returns
// to its original namespace afterwards; if that fails the thread is discarded.
func (ns *namespace) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer func() { _ = orig.Close() }()
		if err := vnetns.Set(ns.handle); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering namespace %s: %w", ns.name, err)
			return
		}
		fnErr := fn()
		if err := vnetns.Set(orig); err != nil {
			// Leave the thread locked: the runtime ends it when this goroutine exits.
			errc <- errors.Join(fnErr, fmt.Errorf("leaving namespace %s: %w", ns.name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// DialContext opens a connection whose socket lives in the namespace.
func (ns *namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := ns.do(func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		conn = c
		return err
	})
	return conn, err
}

// httpClient returns an HTTP client that dials from the namespace, without keep-alive.
func (ns *namespace) httpClient(timeout time.Duration, tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.DialContext = ns.DialContext
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr, Timeout: timeout}
}

// ip runs `ip args...` and returns its combined output.
func ip(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
