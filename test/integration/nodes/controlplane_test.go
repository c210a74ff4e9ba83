package nodes_test

import (
	"os"
	"sync"
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The tests of the package share one kube-apiserver (with Gardener's extension CRDs);
// each test removes its Nodes and exposures.
var shared struct {
	once sync.Once
	cp   *framework.ControlPlane
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cp != nil {
		if err := shared.cp.Stop(); err != nil {
			code = 1
		}
	}
	os.Exit(code)
}

func startControlPlane(t *testing.T) *framework.ControlPlane {
	t.Helper()
	shared.once.Do(func() { shared.cp, shared.err = framework.NewControlPlane() })
	if shared.err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", shared.err)
	}
	return shared.cp
}
