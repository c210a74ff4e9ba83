package agentrollout_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The tests of the package share one kube-apiserver; each test that can uses its own
// namespace.
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

func setup(t *testing.T) (context.Context, client.Client) {
	t.Helper()
	shared.once.Do(func() { shared.cp, shared.err = framework.NewControlPlane() })
	if shared.err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", shared.err)
	}
	return t.Context(), shared.cp.Client
}
