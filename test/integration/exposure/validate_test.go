// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestValidateMatchesStatus: the controller binary's validate command, given the Shoot
// manifest with each bad providerConfig of TestErrorsInStatus in its control-plane worker
// pool (where gardenadm users put it), rejects the ones that need no Neutron offline with
// the message the exposure's status shows when the controller reads the same Shoot; the
// ones only Neutron can tell (a network, subnet or pool that does not exist) pass offline.
func TestValidateMatchesStatus(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startController(t, e)

	for _, bad := range badProviderConfigs {
		t.Run(bad.name, func(t *testing.T) {
			raw := &runtime.RawExtension{Raw: []byte(bad.providerConfig)}
			out, err := validateShoot(t, ctx, e, raw)
			t.Logf("validate: %s", out)
			if !bad.offline {
				if err != nil || !strings.HasSuffix(out, ": valid") {
					t.Errorf("validate rejected a providerConfig that only Neutron can judge: %v, %s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate accepted the bad providerConfig: %s", out)
			}
			_, message, found := strings.Cut(out, "garden/"+framework.DefaultShootName+": ")
			if !found || !strings.Contains(message, bad.mention) {
				t.Fatalf("validate printed %q, want the Shoot and a message that mentions %q", out, bad.mention)
			}

			identity := useIdentity(t, ctx, e)
			if err := framework.SetShootExposureProviderConfig(ctx, e.cp.Client, raw); err != nil {
				t.Fatal(err)
			}
			exp := newExposure(exposureOptions{name: identity})
			create(t, ctx, e, exp, identity)
			// Runs before the exposure's deletion (cleanups run last in, first out).
			t.Cleanup(func() { _ = framework.SetShootExposureProviderConfig(context.Background(), e.cp.Client, nil) })
			got := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
			if !strings.Contains(got.Status.LastError.Description, message) {
				t.Errorf("validate said %q, the status says %q", message, got.Status.LastError.Description)
			}
		})
	}
}

// validateShoot writes the Cluster's Shoot with providerConfig in its control-plane worker
// pool to a manifest and runs the validate command on it; it returns the printed line.
func validateShoot(t *testing.T, ctx context.Context, e *sharedEnv, providerConfig *runtime.RawExtension) (string, error) {
	t.Helper()
	cluster := &extensionsv1alpha1.Cluster{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: framework.Namespace}, cluster); err != nil {
		t.Fatal(err)
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(cluster.Spec.Shoot.Raw, shoot); err != nil {
		t.Fatal(err)
	}
	pool := v1beta1helper.ControlPlaneWorkerPoolForShoot(shoot.Spec.Provider.Workers)
	pool.ControlPlane.Exposure.Extension.ProviderConfig = providerConfig
	manifest, err := yaml.Marshal(shoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shoot.yaml"), manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := app.NewControllerManagerCommand(ctx)
	cmd.SetArgs([]string{"validate", dir})
	cmd.SetOut(&out)
	err = cmd.Execute()
	return strings.TrimSpace(out.String()), err
}
