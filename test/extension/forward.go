// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// loopbackAddresses are the host:port of the given http URLs, all on loopback.
func loopbackAddresses(urls ...string) ([]string, error) {
	var out []string
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", s, err)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%s is not on loopback; the forwarder only bridges loopback addresses", s)
		}
		out = append(out, u.Host)
	}
	return out, nil
}

// loopbackForwarder listens on loopback addresses inside node namespaces and forwards each
// connection to the same address in the host namespace.
type loopbackForwarder struct {
	listeners []net.Listener
	wg        sync.WaitGroup
}

func forwardLoopback(ctx context.Context, nodes []*netns.Node, addrs []string) (*loopbackForwarder, error) {
	f := &loopbackForwarder{}
	for _, n := range nodes {
		for _, a := range addrs {
			l, err := n.Listen(ctx, "tcp", a)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("listening on %s in %s: %w", a, n.Name(), err)
			}
			f.listeners = append(f.listeners, l)
			f.wg.Add(1)
			go f.serve(l, a)
		}
	}
	return f, nil
}

func (f *loopbackForwarder) serve(l net.Listener, target string) {
	defer f.wg.Done()
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = in.Close() }()
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(out, in)
				_ = out.(*net.TCPConn).CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(in, out)
			_ = in.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// Close stops listening; open connections end with their peers.
func (f *loopbackForwarder) Close() {
	for _, l := range f.listeners {
		_ = l.Close()
	}
	f.wg.Wait()
}
