// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestKubectlWaitsForVIPHeld: the exposure's conditions are in status.conditions too, so
// that kubectl wait --for=condition=VIPHeld (and Gardener's tooling) sees them.
func TestKubectlWaitsForVIPHeld(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, _, _, _ := frontDoor(t, ctx, e, 3)

	bin, err := framework.KubeBinaries()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := e.cp.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	// The controller here runs no agent and checks no front door (--front-door-probe=off):
	// VIPHeld is Unknown, and kubectl sees that too.
	for _, condition := range []string{"VIPHeld=Unknown", "OpenStackVerified"} {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), "--kubeconfig", path, "-n", exp.Namespace,
			"wait", "--for=condition="+condition, "--timeout=20s", "selfhostedshootexposure/"+exp.Name).CombinedOutput()
		if err != nil {
			t.Errorf("kubectl wait --for=condition=%s: %v: %s", condition, err, out)
		}
	}
}
