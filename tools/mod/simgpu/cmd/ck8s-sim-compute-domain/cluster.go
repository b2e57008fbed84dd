package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// cluster is the API access both modes share.
type cluster struct {
	core kubernetes.Interface
	dyn  dynamic.Interface
}

func fromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (c *cluster) listComputeDomains(ctx context.Context) ([]*ComputeDomain, error) {
	l, err := c.dyn.Resource(cdGVR).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*ComputeDomain
	for i := range l.Items {
		cd, err := fromUnstructured[ComputeDomain](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, cd)
	}
	return out, nil
}

// computeDomainByUID is the kubelet plugin's GetComputeDomain (computedomain.go: informer index by
// UID; nil when absent, an error for more than one).
func (c *cluster) computeDomainByUID(ctx context.Context, uid string) (*ComputeDomain, error) {
	cds, err := c.listComputeDomains(ctx)
	if err != nil {
		return nil, fmt.Errorf("error retrieving ComputeDomain by UID: %w", err)
	}
	var found []*ComputeDomain
	for _, cd := range cds {
		if string(cd.UID) == uid {
			found = append(found, cd)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("multiple ComputeDomains with the same UID")
	}
}

func (c *cluster) listCliques(ctx context.Context, namespace string) ([]*ComputeDomainClique, error) {
	l, err := c.dyn.Resource(cliqueGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*ComputeDomainClique
	for i := range l.Items {
		cl, err := fromUnstructured[ComputeDomainClique](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, cl)
	}
	return out, nil
}

// updateClique gets the named clique, lets mutate change it (false: nothing to write) and updates
// it, retrying on conflicts (several nodes' daemons write the same clique).
func (c *cluster) updateClique(ctx context.Context, ns, name string, mutate func(*ComputeDomainClique) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := c.dyn.Resource(cliqueGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cl, err := fromUnstructured[ComputeDomainClique](u)
		if err != nil {
			return err
		}
		if !mutate(cl) {
			return nil
		}
		nu, err := toUnstructured(cl)
		if err != nil {
			return err
		}
		_, err = c.dyn.Resource(cliqueGVR).Namespace(ns).Update(ctx, nu, metav1.UpdateOptions{})
		return err
	})
}

// mutateNode updates a Node's labels, retrying on conflicts.
func (c *cluster) mutateNode(ctx context.Context, name string, mutate func(*corev1.Node) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("error retrieving Node: %w", err)
		}
		node = node.DeepCopy()
		changed, err := mutate(node)
		if err != nil || !changed {
			return err
		}
		_, err = c.core.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
