// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// LeaseClient is the part of the Lease API that the election uses. client-go's typed
// LeaseInterface satisfies it.
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// restLeases is a LeaseClient over a REST client whose scheme knows only the Lease. The
// typed clientset would register every built-in API group and make the agent binary
// several megabytes larger for nothing.
type restLeases struct {
	client    rest.Interface
	namespace string
	codec     runtime.ParameterCodec
}

// NewLeaseClient returns a LeaseClient for the namespace.
func NewLeaseClient(cfg *rest.Config, namespace string) (LeaseClient, error) {
	client, scheme, err := NarrowRESTClient(cfg, coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("building the Lease client: %w", err)
	}
	return &restLeases{client: client, namespace: namespace, codec: runtime.NewParameterCodec(scheme)}, nil
}

// NarrowRESTClient returns a REST client for the API group version gv whose scheme knows
// only the types add registers (and the meta types), and that scheme.
func NarrowRESTClient(cfg *rest.Config, gv schema.GroupVersion, add func(*runtime.Scheme) error) (rest.Interface, *runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := add(scheme); err != nil {
		return nil, nil, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, nil, err
	}
	return client, scheme, nil
}

func (l *restLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := l.client.Get().Namespace(l.namespace).Resource("leases").Name(name).
		VersionedParams(&opts, l.codec).Do(ctx).Into(out)
	return out, err
}

func (l *restLeases) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := l.client.Post().Namespace(l.namespace).Resource("leases").
		VersionedParams(&opts, l.codec).Body(lease).Do(ctx).Into(out)
	return out, err
}

func (l *restLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := l.client.Put().Namespace(l.namespace).Resource("leases").Name(lease.Name).
		VersionedParams(&opts, l.codec).Body(lease).Do(ctx).Into(out)
	return out, err
}

func (l *restLeases) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return l.client.Get().Namespace(l.namespace).Resource("leases").
		VersionedParams(&opts, l.codec).Watch(ctx)
}
