// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotOurs is Deploy's error when an object of the agent's name exists without the
// extension's label: it is someone else's, and Deploy does not take it over.
var ErrNotOurs = errors.New("an object of the agent's name exists and is not managed by the extension")

// ref names one object of an agent.
type ref struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (r ref) String() string { return fmt.Sprintf("%s %s/%s", r.gvk.Kind, r.namespace, r.name) }

func (r ref) metadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.name}}
	m.SetGroupVersionKind(r.gvk)
	return m
}

var (
	daemonSetGVK      = appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	serviceAccountGVK = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	serviceGVK        = corev1.SchemeGroupVersion.WithKind("Service")
	roleGVK           = rbacv1.SchemeGroupVersion.WithKind("Role")
	roleBindingGVK    = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	leaseGVK          = coordinationv1.SchemeGroupVersion.WithKind("Lease")
)

func (o objectNames) daemonSetRef(namespace string) ref {
	return ref{daemonSetGVK, namespace, o.name}
}

// supporting are the agent's objects besides its DaemonSet, in the order they are
// deleted; the ServiceAccount last, see present.
func (o objectNames) supporting(namespace string) []ref {
	var out []ref
	if o.readsPeers {
		out = append(out, ref{roleBindingGVK, PeerNamespace, o.name}, ref{roleGVK, PeerNamespace, o.name})
	}
	if o.hasMetricsService {
		out = append(out,
			ref{ServiceMonitorGVK, namespace, MonitoringName()},
			ref{PrometheusRuleGVK, namespace, MonitoringName()},
			ref{serviceGVK, namespace, o.name})
	}
	return append(out,
		ref{roleBindingGVK, namespace, o.name},
		ref{roleGVK, namespace, o.name},
		ref{leaseGVK, namespace, o.lease},
		ref{serviceAccountGVK, namespace, o.name})
}

// getOwned reads key into obj and tells whether it exists and carries the extension's
// label. A kind the cluster does not serve (no prometheus-operator CRDs) has no object.
func (d *Deployer) getOwned(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	err := d.reader.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return Owned(obj), nil
}

// deleteOwned deletes the object r names if it carries the extension's label, and only
// that very object (UID precondition): one re-created meanwhile by someone else stays.
func (d *Deployer) deleteOwned(ctx context.Context, r ref, opts ...client.DeleteOption) error {
	obj := r.metadata()
	owned, err := d.getOwned(ctx, client.ObjectKeyFromObject(obj), obj)
	if err != nil || !owned {
		return err
	}
	uid := obj.UID
	opts = append(opts, client.Preconditions{UID: &uid})
	if err := d.client.Delete(ctx, obj, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s: %w", r, err)
	}
	return nil
}

// refuseForeign returns ErrNotOurs when one of refs exists without the extension's label,
// and otherwise the refs that do not exist.
func (d *Deployer) refuseForeign(ctx context.Context, refs []ref) (absent map[ref]bool, err error) {
	absent = map[ref]bool{}
	for _, r := range refs {
		obj := r.metadata()
		err := d.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			absent[r] = true
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", r, err)
		case !Owned(obj):
			return nil, fmt.Errorf("%w: %s has no label %s=%s; rename or remove it", ErrNotOurs, r, LabelManagedBy, ManagedByValue)
		}
	}
	return absent, nil
}
