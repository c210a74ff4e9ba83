// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"sync"
	"testing"
)

// SharedControlPlane starts one control plane on first use and hands the same one to
// every test of a package; the package's TestMain stops it:
//
//	var cp framework.SharedControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(cp.Run(m)) }
//
//	func TestX(t *testing.T) { c := cp.Get(t) ... }
type SharedControlPlane struct {
	// Options are passed to NewControlPlane.
	Options []ControlPlaneOption

	once sync.Once
	cp   *ControlPlane
	err  error
}

// Get returns the shared control plane, starting it if needed; it fails the test if the
// control plane cannot start.
func (s *SharedControlPlane) Get(t testing.TB) *ControlPlane {
	t.Helper()
	s.once.Do(func() { s.cp, s.err = NewControlPlane(s.Options...) })
	if s.err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", s.err)
	}
	return s.cp
}

// Run runs the tests and stops the control plane afterwards; it returns the exit code.
func (s *SharedControlPlane) Run(m *testing.M) int {
	code := m.Run()
	if s.cp != nil {
		if err := s.cp.Stop(); err != nil {
			code = 1
		}
	}
	return code
}

// Suite is an environment that a test package sets up once, on first use, and tears down
// after its tests, undoing the set-up's steps in reverse order:
//
//	var suite framework.Suite[*env]
//
//	func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }
//
//	func TestX(t *testing.T) { e := suite.Get(t, setup) ... }
//
// where setup registers each step's undo with Defer as soon as the step succeeded, so that
// a set-up that fails half-way leaves nothing behind either.
type Suite[E any] struct {
	once   sync.Once
	env    E
	err    error
	undo   []func()
	undoMu sync.Mutex
}

// Get returns the environment, setting it up with setup on the first call; it fails the
// test if the set-up failed (then and on every later call).
func (s *Suite[E]) Get(t testing.TB, setup func(*Suite[E]) (E, error)) E {
	t.Helper()
	s.once.Do(func() { s.env, s.err = setup(s) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.env
}

// Defer registers an undo step, run by Run after the tests.
func (s *Suite[E]) Defer(undo func()) {
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	s.undo = append(s.undo, undo)
}

// Run runs the tests, then the undo steps in reverse order; it returns the exit code.
func (s *Suite[E]) Run(m *testing.M) int {
	code := m.Run()
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	return code
}
