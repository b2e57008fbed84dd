package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// The controller mode: cmd/compute-domain-controller in driver-managed IMEX mode, minus the IMEX
// daemon DaemonSet and its daemon ResourceClaimTemplate (daemonset.go, mnsdaemonset.go): no IMEX
// runs here, so the kubelet plugin plays each node's daemon (plugin.go joinClique). Upstream reacts
// to informer events and syncs status every 2 s (cdstatus.go cdStatusSyncInterval); this simulator
// polls every second instead.

// workloadRCT is resourceclaimtemplate.go WorkloadResourceClaimTemplateManager.Create rendered
// through templates/compute-domain-workload-claim-template.tmpl.yaml: in the CD's namespace, named
// by spec.channel.resourceClaimTemplate.name, the CD's finalizer and labels (no ownerReference
// upstream), one request "channel" of the default-channel class, and the opaque
// ComputeDomainChannelConfig {domainID: CD UID, allocationMode: the CD's}.
func workloadRCT(cd *ComputeDomain) (*resourceapi.ResourceClaimTemplate, error) {
	if cd.Spec.Channel == nil || cd.Spec.Channel.ResourceClaimTemplate.Name == "" {
		return nil, fmt.Errorf("ComputeDomain %s/%s has no spec.channel.resourceClaimTemplate.name", cd.Namespace, cd.Name)
	}
	params, err := json.Marshal(ComputeDomainChannelConfig{
		TypeMeta:       metav1.TypeMeta{APIVersion: groupName + "/" + apiVersion, Kind: channelConfigKind},
		DomainID:       string(cd.UID),
		AllocationMode: cd.Spec.Channel.AllocationMode, // channelAllocationModeFor, driver-managed
	})
	if err != nil {
		return nil, err
	}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:  cd.Namespace,
			Name:       cd.Spec.Channel.ResourceClaimTemplate.Name,
			Finalizers: []string{computeDomainFinalizer},
			Labels:     map[string]string{computeDomainLabelKey: string(cd.UID), targetLabelKey: targetWorkload},
		},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{
				Name:    "channel",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: defaultChannelDeviceClass},
			}},
			Config: []resourceapi.DeviceClaimConfiguration{{
				Requests: []string{"channel"},
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver: driverName, Parameters: runtime.RawExtension{Raw: params},
				}},
			}},
		}}},
	}, nil
}

// globalStatus is computedomain.go calculateGlobalStatus (driver-managed): NotReady while fewer than
// numNodes nodes are listed or any listed node is NotReady, else Ready. With numNodes 0 (the
// default) an empty domain is Ready.
func globalStatus(numNodes int, nodes []*ComputeDomainNode) string {
	if len(nodes) < numNodes {
		return statusNotReady
	}
	for _, n := range nodes {
		if n.Status == statusNotReady {
			return statusNotReady
		}
	}
	return statusReady
}

// nodesFromCliques is cdstatus.go buildNodesFromCliques over the cliques labelled with the CD's UID.
func nodesFromCliques(cdUID types.UID, cliques []*ComputeDomainClique) []*ComputeDomainNode {
	var out []*ComputeDomainNode
	for _, cl := range cliques {
		if cl.Labels[computeDomainLabelKey] != string(cdUID) {
			continue
		}
		for _, d := range cl.Daemons {
			out = append(out, &ComputeDomainNode{Name: d.NodeName, IPAddress: d.IPAddress, CliqueID: d.CliqueID, Index: d.Index, Status: d.Status})
		}
	}
	slices.SortFunc(out, func(a, b *ComputeDomainNode) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// nodesEqual is cdstatus.go nodesEqual: the same nodes by name, field by field.
func nodesEqual(a, b []*ComputeDomainNode) bool {
	toMap := func(ns []*ComputeDomainNode) map[string]ComputeDomainNode {
		m := map[string]ComputeDomainNode{}
		for _, n := range ns {
			m[n.Name] = *n
		}
		return m
	}
	return maps.Equal(toMap(a), toMap(b))
}

type controller struct {
	c         *cluster
	namespace string // the driver's namespace (cliques)
}

func (ct *controller) run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if err := ct.reconcile(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Reconcile failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (ct *controller) workloadRCTs(ctx context.Context) ([]resourceapi.ResourceClaimTemplate, error) {
	sel := fmt.Sprintf("%s,%s=%s", computeDomainLabelKey, targetLabelKey, targetWorkload)
	l, err := ct.c.core.ResourceV1().ResourceClaimTemplates(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (ct *controller) reconcile(ctx context.Context) error {
	cds, err := ct.c.listComputeDomains(ctx)
	if err != nil {
		return fmt.Errorf("list ComputeDomains: %w", err)
	}
	cliques, err := ct.c.listCliques(ctx, ct.namespace)
	if err != nil {
		return fmt.Errorf("list ComputeDomainCliques: %w", err)
	}
	rcts, err := ct.workloadRCTs(ctx)
	if err != nil {
		return fmt.Errorf("list ResourceClaimTemplates: %w", err)
	}
	live := map[string]*ComputeDomain{}
	for _, cd := range cds {
		live[string(cd.UID)] = cd
	}
	var errs []error
	// cleanup.go: what carries the label of a CD that no longer exists goes.
	for _, rct := range rcts {
		if live[rct.Labels[computeDomainLabelKey]] == nil {
			errs = append(errs, ct.removeRCT(ctx, &rct))
		}
	}
	for _, cd := range cds {
		var mine []resourceapi.ResourceClaimTemplate
		for _, r := range rcts {
			if r.Labels[computeDomainLabelKey] == string(cd.UID) {
				mine = append(mine, r)
			}
		}
		if cd.DeletionTimestamp != nil {
			errs = append(errs, ct.onDelete(ctx, cd, mine, cliques))
		} else {
			errs = append(errs, ct.onAddOrUpdate(ctx, cd, mine, cliques))
		}
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// onAddOrUpdate is computedomain.go onAddOrUpdateDriverManaged (finalizer, RCT, status) plus the
// cdstatus.go sync of status.nodes from the cliques.
func (ct *controller) onAddOrUpdate(ctx context.Context, cd *ComputeDomain, rcts []resourceapi.ResourceClaimTemplate, cliques []*ComputeDomainClique) error {
	if !slices.Contains(cd.Finalizers, computeDomainFinalizer) {
		if err := ct.setFinalizer(ctx, cd, true); err != nil {
			return fmt.Errorf("error adding finalizer: %w", err)
		}
	}
	if len(rcts) > 1 {
		return fmt.Errorf("more than one ResourceClaimTemplate found with same ComputeDomain UID")
	}
	if len(rcts) == 0 {
		rct, err := workloadRCT(cd)
		if err != nil {
			return err
		}
		if _, err := ct.c.core.ResourceV1().ResourceClaimTemplates(cd.Namespace).Create(ctx, rct, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("error creating ResourceClaimTemplate '%s/%s': %w", cd.Namespace, rct.Name, err)
		}
		klog.InfoS("Created ResourceClaimTemplate", "computeDomain", klog.KObj(cd), "template", rct.Name)
	}
	nodes := nodesFromCliques(cd.UID, cliques)
	status := globalStatus(cd.Spec.NumNodes, nodes)
	if nodesEqual(cd.Status.Nodes, nodes) && cd.Status.Status == status {
		return nil
	}
	return ct.updateStatus(ctx, cd, nodes, status)
}

// onDelete is onAddOrUpdateDriverManaged's deletion branch: RCT deleted and its finalizer removed,
// the CD's node labels removed (node.go RemoveComputeDomainLabels), then the CD's finalizer. The
// cliques go too: upstream they are owned by the daemon pods and garbage-collected with them.
func (ct *controller) onDelete(ctx context.Context, cd *ComputeDomain, rcts []resourceapi.ResourceClaimTemplate, cliques []*ComputeDomainClique) error {
	for i := range rcts {
		if err := ct.removeRCT(ctx, &rcts[i]); err != nil {
			return err
		}
	}
	nodes, err := ct.c.core.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: computeDomainLabelKey + "=" + string(cd.UID)})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		err := ct.c.mutateNode(ctx, n.Name, func(n *corev1.Node) (bool, error) {
			if n.Labels[computeDomainLabelKey] != string(cd.UID) {
				return false, nil
			}
			delete(n.Labels, computeDomainLabelKey)
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("error removing ComputeDomain node labels: %w", err)
		}
	}
	for _, cl := range cliques {
		if cl.Labels[computeDomainLabelKey] == string(cd.UID) {
			err := ct.c.dyn.Resource(cliqueGVR).Namespace(cl.Namespace).Delete(ctx, cl.Name, metav1.DeleteOptions{})
			if ignoreNotFound(err) != nil {
				return err
			}
		}
	}
	if len(rcts) > 0 { // AssertRemoved: the next round removes the CD's finalizer
		return nil
	}
	return ct.setFinalizer(ctx, cd, false)
}

// removeRCT is BaseResourceClaimTemplateManager Delete + RemoveFinalizer.
func (ct *controller) removeRCT(ctx context.Context, rct *resourceapi.ResourceClaimTemplate) error {
	api := ct.c.core.ResourceV1().ResourceClaimTemplates(rct.Namespace)
	if rct.DeletionTimestamp == nil {
		if err := api.Delete(ctx, rct.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return fmt.Errorf("erroring deleting ResourceClaimTemplate: %w", err)
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, rct.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == computeDomainFinalizer })
		if len(keep) == len(cur.Finalizers) {
			return nil
		}
		cur.Finalizers = keep
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if ignoreNotFound(err) != nil {
		return fmt.Errorf("error removing finalizer on ResourceClaimTemplate: %w", err)
	}
	return nil
}

func (ct *controller) setFinalizer(ctx context.Context, cd *ComputeDomain, present bool) error {
	api := ct.c.dyn.Resource(cdGVR).Namespace(cd.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := api.Get(ctx, cd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fs := slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == computeDomainFinalizer })
		if present {
			fs = append(fs, computeDomainFinalizer)
		}
		u.SetFinalizers(fs)
		_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// updateStatus writes status.nodes and the global status through the status subresource
// (computedomain.go UpdateStatus recalculates the global status on every write).
func (ct *controller) updateStatus(ctx context.Context, cd *ComputeDomain, nodes []*ComputeDomainNode, status string) error {
	api := ct.c.dyn.Resource(cdGVR).Namespace(cd.Namespace)
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ComputeDomainStatus{Status: status, Nodes: nodes})
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := api.Get(ctx, cd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = st
		_, err = api.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("error updating ComputeDomain %s/%s status: %w", cd.Namespace, cd.Name, err)
	}
	klog.InfoS("Updated ComputeDomain status", "computeDomain", klog.KObj(cd), "status", status, "nodes", len(nodes))
	return nil
}
