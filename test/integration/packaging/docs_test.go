// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// TestAgentCLIDefaultsDocumented checks the agent's flag table in docs/design.md ("Agent
// CLI") against agent.DefaultConfig, and the agent's probe as test/bench/README.md
// describes the benchmarked defaults.
func TestAgentCLIDefaultsDocumented(t *testing.T) {
	root := repoRoot(t)
	design, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	// | `--a` / `--b` | `x` / `y` | meaning |
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| (`--[^|]+) \\| (`[^|]+) \\|").FindAllSubmatch(design, -1) {
		flags, values := strings.Split(string(m[1]), " / "), strings.Split(string(m[2]), " / ")
		if len(flags) != len(values) {
			continue
		}
		for i := range flags {
			documented[strings.Trim(flags[i], "` ")] = strings.Trim(values[i], "` ")
		}
	}
	def := agent.DefaultConfig()
	want := map[string]string{
		"--lease-duration":           def.LeaseDuration.String(),
		"--renew-deadline":           def.RenewDeadline.String(),
		"--retry-period":             def.RetryPeriod.String(),
		"--vip-lifetime":             def.VIPLifetime.String(),
		"--arp-interval":             def.ARPInterval.String(),
		"--apiserver-url":            def.APIServerURL,
		"--apiserver-server-name":    def.APIServerServerName,
		"--health-period":            def.HealthPeriod.String(),
		"--health-timeout":           def.HealthTimeout.String(),
		"--health-failure-threshold": strconv.Itoa(def.HealthFailureThreshold),
		"--metrics-address":          def.MetricsAddress,
	}
	for flag, value := range want {
		if got, ok := documented[flag]; !ok || got != value {
			t.Errorf("docs/design.md: %s defaults to %q, the code to %q", flag, got, value)
		}
	}

	bench, err := os.ReadFile(filepath.Join(root, "test", "bench", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf("probe every %s, closed after %d failures", strings.TrimSuffix(def.HealthPeriod.String(), "s")+" s", def.HealthFailureThreshold)
	if !strings.Contains(string(bench), probe) {
		t.Errorf("test/bench/README.md does not describe the agent's probe as %q", probe)
	}
}

// TestDocumentedConfigsValid decodes every ExposureConfig that docs/usage.md and
// docs/kube-vip.md show in a YAML block (at the top or as a providerConfig) strictly, and
// validates it as the controller does: an example a user copies must be accepted.
func TestDocumentedConfigsValid(t *testing.T) {
	root := repoRoot(t)
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	checked := 0
	for _, name := range []string{"usage.md", "kube-vip.md"} {
		doc, err := os.ReadFile(filepath.Join(root, "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(doc, -1) {
			var top map[string]any
			if err := yaml.Unmarshal(m[1], &top); err != nil {
				t.Errorf("docs/%s: a YAML block does not parse: %v", name, err)
				continue
			}
			cfg := top
			if nested, ok := top["providerConfig"].(map[string]any); ok {
				cfg = nested
			}
			if cfg["kind"] != "ExposureConfig" {
				continue
			}
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := exposure.DecodeConfig(&runtime.RawExtension{Raw: raw})
			if err != nil {
				t.Errorf("docs/%s: the ExposureConfig %s: %v", name, raw, err)
				continue
			}
			if errs := exposure.ValidateConfig(decoded, field.NewPath("providerConfig")); len(errs) > 0 {
				t.Errorf("docs/%s: the ExposureConfig %s is refused: %v", name, raw, errs.ToAggregate())
			}
			checked++
		}
	}
	// usage.md's full example and internal-only one, kube-vip.md's choice of kube-vip.
	if checked < 3 {
		t.Errorf("checked %d documented ExposureConfigs, want at least 3", checked)
	}
}
