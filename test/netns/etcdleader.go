// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// EtcdTransferLeadership asks the node's etcd member, which must lead, to hand the raft
// leadership to the member of node to (etcd's gRPC gateway, as etcdctl move-leader does).
func (n *Node) EtcdTransferLeadership(ctx context.Context, to *Node) error {
	var list struct {
		Members []struct {
			ID   json.Number `json:"ID"`
			Name string      `json:"name"`
		} `json:"members"`
	}
	if err := n.etcdGateway(ctx, "/v3/cluster/member/list", struct{}{}, &list); err != nil {
		return err
	}
	for _, m := range list.Members {
		if m.Name == to.name {
			body := map[string]json.Number{"targetID": m.ID}
			return n.etcdGateway(ctx, "/v3/maintenance/transfer-leadership", body, nil)
		}
	}
	return fmt.Errorf("no etcd member named %s", to.name)
}

// etcdGateway posts in as JSON to the node's etcd member and decodes the answer into out.
func (n *Node) etcdGateway(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:2379"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.HTTPClient(5*time.Second, &http.Transport{}).Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s on %s: %w", path, n.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s on %s: status %d: %s", path, n.name, resp.StatusCode, bytes.TrimSpace(body))
	}
	if out == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("etcd %s on %s: %w", path, n.name, err)
	}
	return nil
}
