// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadOpenStackEnv(t *testing.T) {
	vars := map[string]string{
		"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_REGION_NAME": "RegionOne", "OS_DOMAIN_NAME": "Default",
		"OS_PROJECT_NAME": "demo", "OS_PROJECT_ID": "p1", "OS_USERNAME": "demo", "OS_PASSWORD": "demopass",
		"OS_APPLICATION_CREDENTIAL_ID": "ac", "OS_APPLICATION_CREDENTIAL_SECRET": "s3cr=t",
		"NEUTRON_URL": "http://127.0.0.1:9696", "EXTERNAL_NETWORK_ID": "ext", "EXTERNAL_NETWORK_NAME": "public",
		"NETWORK_ID": "net", "SUBNET_ID": "sub", "ROUTER_ID": "r", "SECURITY_GROUP_ID": "sg",
		"NODE_PORT_IDS": `"a b c"`, "NODE_IPS": `"198.18.0.11 198.18.0.12 198.18.0.13"`,
	}
	write := func(t *testing.T, skip string) string {
		var b strings.Builder
		b.WriteString("# comment\n\n")
		for k, v := range vars {
			if k != skip {
				b.WriteString("export " + k + "=" + v + "\n")
			}
		}
		p := filepath.Join(t.TempDir(), "env.sh")
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	env, err := LoadOpenStackEnv(write(t, ""))
	if err != nil {
		t.Fatalf("LoadOpenStackEnv: %v", err)
	}
	if env.ApplicationCredentialSecret != "s3cr=t" || env.NeutronURL != "http://127.0.0.1:9696" ||
		!slices.Equal(env.NodePortIDs, []string{"a", "b", "c"}) || env.NodeIPs[2] != "198.18.0.13" {
		t.Errorf("parsed %+v", env)
	}
	o := env.BootstrapOptions(Password)
	if o.Username != "demo" || o.ApplicationCredentialID != "" || o.FloatingPoolID != "ext" || o.TenantName != "demo" {
		t.Errorf("password bootstrap options %+v", o)
	}
	if err := o.validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	o.ApplicationCredentialID = "ac"
	if err := o.validate(); err == nil {
		t.Error("validate accepted both credential forms")
	}

	if _, err := LoadOpenStackEnv(write(t, "ROUTER_ID")); err == nil || !strings.Contains(err.Error(), "ROUTER_ID") {
		t.Errorf("missing ROUTER_ID: error %v", err)
	}
}
