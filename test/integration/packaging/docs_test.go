// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/agent"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
)

// TestDocumentedDefaults checks the defaults that docs/usage.md states against the constants
// of the code: the agent's (agent.DefaultConfig, used when the exposure leaves a field unset)
// and the verify interval (flag default and chart value).
func TestDocumentedDefaults(t *testing.T) {
	root := repoRoot(t)
	usage, err := os.ReadFile(filepath.Join(root, "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A table row: | `field` | `default` | meaning |
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-zA-Z.-]+)` \\| `([^`]+)` \\|").FindAllSubmatch(usage, -1) {
		documented[string(m[1])] = string(m[2])
	}

	def := agent.DefaultConfig()
	durations := map[string]time.Duration{
		"agent.leaseDuration":       def.LeaseDuration,
		"agent.renewDeadline":       def.RenewDeadline,
		"agent.retryPeriod":         def.RetryPeriod,
		"agent.vipLifetime":         def.VIPLifetime,
		"agent.arpInterval":         def.ARPInterval,
		"agent.healthCheck.period":  def.HealthPeriod,
		"agent.healthCheck.timeout": def.HealthTimeout,
		"--verify-interval":         exposure.DefaultVerifyInterval,
	}
	for field, want := range durations {
		doc, ok := documented[field]
		if !ok {
			t.Errorf("docs/usage.md has no default for %s", field)
			continue
		}
		if got, err := time.ParseDuration(doc); err != nil || got != want {
			t.Errorf("docs/usage.md: %s defaults to %q, the code to %s", field, doc, want)
		}
	}
	if doc := documented["agent.healthCheck.failureThreshold"]; doc != strconv.Itoa(def.HealthFailureThreshold) {
		t.Errorf("docs/usage.md: agent.healthCheck.failureThreshold defaults to %q, the code to %d", doc, def.HealthFailureThreshold)
	}

	values, err := os.ReadFile(filepath.Join(root, gen.ChartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		VerifyInterval string `json:"verifyInterval"`
	}
	if err := yaml.Unmarshal(values, &chart); err != nil {
		t.Fatal(err)
	}
	if got, err := time.ParseDuration(chart.VerifyInterval); err != nil || got != exposure.DefaultVerifyInterval {
		t.Errorf("chart value verifyInterval = %q, the code's default is %s", chart.VerifyInterval, exposure.DefaultVerifyInterval)
	}
}
