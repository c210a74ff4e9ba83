// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
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
