// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

func TestSummarize(t *testing.T) {
	rounds := [][]phase{
		{{Name: "create", Seconds: 3, Calls: 8, Writes: 5, ByOp: map[string]int{"network PUT ports": 3}}, {Name: "delete", Seconds: 1}},
		{{Name: "create", Seconds: 1, Calls: 7, Writes: 5, ByOp: map[string]int{"network PUT ports": 2, "network GET ports": 1}}, {Name: "delete", Seconds: 2}},
		{{Name: "create", Seconds: 2, Calls: 7, Writes: 4}, {Name: "delete", Seconds: 1.5}},
	}
	got := summarize(rounds)
	if len(got) != 2 || got[0].Name != "create" || got[1].Name != "delete" {
		t.Fatalf("phases %+v", got)
	}
	c := got[0]
	if c.Median != 2 || c.Max != 3 || c.Calls != 8 || c.Writes != 5 {
		t.Errorf("create: %+v", c)
	}
	if c.ByOp["network PUT ports"] != 3 || c.ByOp["network GET ports"] != 1 {
		t.Errorf("create by operation: %v", c.ByOp)
	}
	if d := got[1]; d.Median != 1.5 || d.Max != 2 {
		t.Errorf("delete: %+v", d)
	}
	if summarize(nil) != nil {
		t.Error("no rounds gave phases")
	}
}
