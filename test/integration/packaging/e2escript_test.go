// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestE2EScriptParts checks what of hack/e2e/e2e.sh can be checked without Docker and
// OpenStack (the kind part runs only in .github/workflows/e2e-devstack.yaml, the OpenStack
// steps in TestE2EScriptOpenStackSteps): the script parses, each
// Gardener CRD it applies exists in the module it downloads, and it creates the
// PriorityClass the chart's Deployment names.
func TestE2EScriptParts(t *testing.T) {
	root := repoRoot(t)
	script := filepath.Join(root, "hack", "e2e", "e2e.sh")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v: %s", script, err, out)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}

	// The script's own way to the module: go mod download prints the directory.
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/gardener/gardener")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/gardener/gardener: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json gave no directory (%v): %s", err, out)
	}
	loop := regexp.MustCompile(`for kind in ([a-z ]+); do`).FindSubmatch(src)
	if loop == nil {
		t.Fatal("e2e.sh: no loop over the CRD kinds")
	}
	for _, kind := range regexp.MustCompile(`[a-z]+`).FindAll(loop[1], -1) {
		crd := filepath.Join(mod.Dir, "pkg", "component", "extensions", "crds", "assets", "crd-extensions.gardener.cloud_"+string(kind)+".yaml")
		if _, err := os.Stat(crd); err != nil {
			t.Errorf("e2e.sh applies %s: %v", crd, err)
		}
	}

	values, err := os.ReadFile(filepath.Join(root, "charts", "gardener-extension-kube-vip", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pcs := regexp.MustCompile(`gardener-system-[0-9]+`).FindAll(values, -1)
	if len(pcs) == 0 {
		t.Fatal("the chart's values name no gardener-system PriorityClass")
	}
	for _, pc := range pcs {
		if !regexp.MustCompile(`create priorityclass ` + string(pc) + `\b`).Match(src) {
			t.Errorf("the chart names PriorityClass %s, which e2e.sh does not create (kind has none)", pc)
		}
	}
}
