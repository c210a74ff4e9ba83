// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestValidateCommand: the validate command finds the Shoots among gardenadm's config
// files, accepts the example Shoot and rejects a typo with the decoder's message.
func TestValidateCommand(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", "examples", "shoot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(example), "floatingPoolName: public", "floatingPoolNme: public", 1)
	dualStack := strings.Replace(string(example), "    nodes: 10.250.0.0/16\n", "    nodes: 10.250.0.0/16\n    ipFamilies: [IPv4, IPv6]\n", 1)
	other := "apiVersion: core.gardener.cloud/v1beta1\nkind: CloudProfile\nmetadata:\n  name: openstack\n"
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantErr bool
		want    string
	}{
		{name: "example", files: map[string]string{"shoot.yaml": string(example), "cloudprofile.yaml": other}, want: "Shoot garden/my-shoot: valid"},
		{name: "typo", files: map[string]string{"all.yaml": other + "---\n" + typo}, wantErr: true, want: `unknown field "floatingPoolNme"`},
		{name: "dual-stack", files: map[string]string{"shoot.yaml": dualStack}, want: "Shoot garden/my-shoot: valid"},
		{name: "no shoot", files: map[string]string{"cloudprofile.yaml": other}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			cmd := NewValidateCommand()
			cmd.SetArgs([]string{dir})
			cmd.SetOut(&out)
			err := cmd.Execute()
			if (err != nil) != tc.wantErr || !strings.Contains(out.String(), tc.want) {
				t.Errorf("error %v, output %q; want error %v and %q", err, out.String(), tc.wantErr, tc.want)
			}
		})
	}
}

// TestEveryFlagDocumented: docs/usage.md's "Controller flags" section names every flag of
// the controller binary, gardener's generic ones included (a `--prefix*` covers a family).
func TestEveryFlagDocumented(t *testing.T) {
	usage, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(usage), "### Controller flags")
	section, _, _ = strings.Cut(section, "\n## ")
	var prefixes []string
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)\\*`").FindAllStringSubmatch(section, -1) {
		prefixes = append(prefixes, m[1])
	}
	NewControllerManagerCommand(t.Context()).Flags().VisitAll(func(f *pflag.Flag) {
		if strings.Contains(section, "`--"+f.Name+"`") || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(f.Name, p) }) {
			return
		}
		t.Errorf("docs/usage.md's controller flags do not name --%s", f.Name)
	})
}
