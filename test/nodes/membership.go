// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// AddNode joins a control-plane node to the running cluster, as a new machine does: the
// harness's node (netns.Harness.AddNode: NIC, etcd member, kube-apiserver), containerd
// with the cluster's images, and a kubelet. It returns when the node is Ready and labelled
// as a control-plane node.
func (c *Cluster) AddNode(ctx context.Context) (*Node, error) {
	hn, err := c.net.AddNode(ctx)
	if err != nil {
		return nil, err
	}
	n := &Node{Node: hn, dir: filepath.Join(c.dir, hn.Name()), cgroupRoot: "/" + filepath.Base(c.dir) + "-" + hn.Name()}
	c.nodes = append(c.nodes, n)
	if err := c.startContainerd(ctx, n); err != nil {
		return n, fmt.Errorf("%s: %w", n.Name(), err)
	}
	if err := c.startKubelet(n, c.binDir); err != nil {
		return n, fmt.Errorf("%s: %w", n.Name(), err)
	}
	if err := c.waitNodesReady(ctx); err != nil {
		return n, err
	}
	// The kubelet set its sysctls at start-up; the host's values go back.
	return n, writeSysctls(c.saved)
}

// RemoveNode takes a node out of the cluster for good, as a cloud deletes a replaced
// machine and its cloud controller manager deletes the Node: its containers, kubelet and
// containerd end, kube-controller-manager and kube-scheduler move to another node if they
// ran there, the harness removes the node (netns.Harness.RemoveNode: etcd member, NIC,
// namespace), and the Node object is deleted, and with it the pods bound to it.
func (c *Cluster) RemoveNode(ctx context.Context, n *Node) error {
	i := slices.Index(c.nodes, n)
	if i < 0 {
		return fmt.Errorf("%s is no node of the cluster", n.Name())
	}
	c.nodes = slices.Delete(c.nodes, i, i+1)
	c.departed = append(c.departed, n)
	var errs []error
	if out, err := n.ctr(ctx, "tasks", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			_, _ = n.ctr(ctx, "tasks", "kill", "-s", "KILL", id)
		}
	}
	errs = append(errs, n.kubelet.Stop(10*time.Second), n.containerd.Stop(10*time.Second), killShims(n.Socket()))
	moveControllers := c.controllersOn == n.Node
	if moveControllers {
		_ = c.kcm.Stop(5 * time.Second) // their exit status after SIGTERM says nothing
		_ = c.sched.Stop(5 * time.Second)
	}
	errs = append(errs, c.net.RemoveNode(ctx, n.Node))
	if moveControllers {
		if len(c.nodes) == 0 {
			errs = append(errs, errors.New("no node left for kube-controller-manager and kube-scheduler"))
		} else if err := c.startControllers(ctx, c.binDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.client.CoreV1().Nodes().Delete(ctx, n.Name(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting the Node %s: %w", n.Name(), err))
	}
	// kube-controller-manager's pod GC deletes them too, but only after a fixed 40 s
	// quarantine (and its 20 s period): the DaemonSets would count the departed node's pods
	// for up to a minute, in which a scenario learns nothing.
	errs = append(errs, c.deletePodsOn(ctx, n.Name()))
	return errors.Join(errs...)
}

// deletePodsOn force-deletes every pod bound to the node, as the pod GC does for a node
// that is gone.
func (c *Cluster) deletePodsOn(ctx context.Context, node string) error {
	pods, err := c.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return fmt.Errorf("listing the pods on %s: %w", node, err)
	}
	var errs []error
	for _, p := range pods.Items {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the pod %s/%s of the departed node %s: %w", p.Namespace, p.Name, node, err))
		}
	}
	return errors.Join(errs...)
}
