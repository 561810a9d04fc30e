package kubenode

// issue 36: 2 — kubernetes-sigs/agent-sandbox on a hutch node. Its
// controller suspends a Sandbox (spec.operatingMode: Suspended) by
// deleting the Sandbox's Pod, and resumes it (Running) by creating the
// Pod again. On a hutch node the Pod's sandbox is hibernated instead of
// stopped (its memory, processes and files written to the node's disk,
// hutch's `sandbox::pause` with depth hibernate), the Sandbox pinned to the
// node while it is suspended, and the Pod made again wakes that sandbox
// instead of booting a fresh one.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// MetaAgentSandbox and MetaAgentSandboxName are the uid and the
// namespace/name of the agent-sandbox Sandbox controlling a Pod, in its
// sandbox's metadata.
const (
	MetaAgentSandbox     = "k8s.agent-sandbox.uid"
	MetaAgentSandboxName = "k8s.agent-sandbox.name"
)

// Annotations hutch sets on a suspended agent-sandbox Sandbox whose
// sandbox it hibernated: the node that holds it, and "true" when hutch
// pinned the Sandbox's pod template to that node (a required node
// affinity, removed at the wake).
const (
	AnnotationHibernatedOn = "hutch.dev/hibernated-on"
	AnnotationPinned       = "hutch.dev/pinned"
)

// agentSandboxGroup is agent-sandbox's core API group; sandboxesGVR its
// Sandboxes at v1beta1.
const agentSandboxGroup = "agents.x-k8s.io"

// sweepInterval is how often a node looks for the hibernated sandboxes
// of Sandboxes deleted while suspended.
const sweepInterval = 10 * time.Second

// hibernateTimeout bounds a suspended Sandbox's hibernation (its memory
// written to disk).
const hibernateTimeout = 2 * time.Minute

var sandboxesGVR = schema.GroupVersionResource{Group: agentSandboxGroup, Version: "v1beta1", Resource: "sandboxes"}

// agentSandboxOf is the uid and name of the agent-sandbox Sandbox that
// controls k ("" for none).
func agentSandboxOf(k *corev1.Pod) (types.UID, string) {
	ref := metav1.GetControllerOf(k)
	if ref == nil || ref.Kind != "Sandbox" || !strings.HasPrefix(ref.APIVersion, agentSandboxGroup+"/") {
		return "", ""
	}
	return ref.UID, ref.Name
}

// withAgentSandbox adds to meta the uid of the Sandbox controlling k, if
// any.
func withAgentSandbox(k *corev1.Pod, meta map[string]string) map[string]string {
	if uid, name := agentSandboxOf(k); uid != "" {
		if meta == nil {
			meta = map[string]string{}
		}
		meta[MetaAgentSandbox], meta[MetaAgentSandboxName] = string(uid), key(k.Namespace, name)
	}
	return meta
}

// suspendedSandbox is the Sandbox controlling k when its operatingMode is
// Suspended (nil otherwise, or when it cannot be read).
func (p *provider) suspendedSandbox(ctx context.Context, k *corev1.Pod) *unstructured.Unstructured {
	uid, name := agentSandboxOf(k)
	if uid == "" || p.dyn == nil {
		return nil
	}
	sb, err := p.dyn.Resource(sandboxesGVR).Namespace(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !k8serrors.IsNotFound(err) { // gone: the Pod goes with its Sandbox
			p.log.Warn("reading the agent-sandbox Sandbox of a deleted Pod", "sandbox_object", key(k.Namespace, name), "err", err)
		}
		return nil
	}
	if mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode"); sb.GetUID() != uid || mode != "Suspended" {
		return nil
	}
	return sb
}

// hibernateSuspended hibernates pd's sandbox, instead of stopping it,
// when pd's Pod is deleted because its Sandbox is suspended; it pins the
// Sandbox to this node for the wake. False when the Pod is not such a
// Pod or the hibernation failed (the caller stops the sandbox).
func (p *provider) hibernateSuspended(ctx context.Context, pd *pod) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hibernateTimeout)
	defer cancel()
	sb := p.suspendedSandbox(ctx, pd.pod)
	if sb == nil {
		return false
	}
	if _, err := functions.Call[api.StateResponse](ctx, p.o.Table, api.FnPause, api.PauseRequest{SandboxID: pd.sandbox, Depth: api.PauseHibernate}); err != nil {
		p.log.Warn("hibernating a suspended agent-sandbox Sandbox's sandbox; stopping it", "sandbox", pd.sandbox, "err", err)
		return false
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationHibernatedOn: p.node}}}
	// The Pod made at the wake must come back to this node: a required
	// node affinity on the node's name, unless the template has an
	// affinity of its own (then the Sandbox is not pinned).
	if a, found, _ := unstructured.NestedMap(sb.Object, "spec", "podTemplate", "spec", "affinity"); !found || len(a) == 0 {
		patch["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationPinned] = "true"
		patch["spec"] = map[string]any{"podTemplate": map[string]any{"spec": map[string]any{"affinity": map[string]any{
			"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchFields": []any{map[string]any{
					"key": "metadata.name", "operator": "In", "values": []any{p.node}}}}}}}}}}}
	}
	if err := p.patchSandbox(ctx, sb.GetNamespace(), sb.GetName(), patch); err != nil {
		p.log.Warn("pinning a suspended agent-sandbox Sandbox to its node; its sandbox stays hibernated here", "sandbox", pd.sandbox, "err", err)
	}
	p.log.Info("hibernated a suspended agent-sandbox Sandbox's sandbox", "pod", key(pd.pod.Namespace, pd.pod.Name), "sandbox", pd.sandbox)
	return true
}

// wakeSuspended resumes the sandbox this node hibernated for the Sandbox
// controlling k, and unpins the Sandbox; ok is false when the node holds
// none (or it did not wake: it is stopped, and the Pod gets a fresh one).
func (p *provider) wakeSuspended(ctx context.Context, k *corev1.Pod) (created api.CreateResponse, ok bool) {
	uid, name := agentSandboxOf(k)
	if uid == "" {
		return created, false
	}
	list, err := functions.Call[api.ListResponse](ctx, p.o.Table, api.FnList, api.ListRequest{
		State: []string{"paused"}, Metadata: map[string]string{MetaAgentSandbox: string(uid)}})
	if err != nil || len(list.Sandboxes) == 0 {
		return created, false
	}
	info := list.Sandboxes[0]
	if _, err := functions.Call[api.StateResponse](ctx, p.o.Table, api.FnResume, api.ResumeRequest{SandboxID: info.SandboxID}); err != nil {
		p.log.Warn("waking a resumed agent-sandbox Sandbox's sandbox; the Pod gets a fresh one", "sandbox", info.SandboxID, "err", err)
		p.stopSandbox(ctx, info.SandboxID)
		return created, false
	}
	if p.dyn == nil {
		return api.CreateResponse{SandboxID: info.SandboxID, Image: info.Image}, true
	}
	unpin := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationHibernatedOn: nil, AnnotationPinned: nil}}}
	if sb, err := p.dyn.Resource(sandboxesGVR).Namespace(k.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && sb.GetAnnotations()[AnnotationPinned] == "true" {
		unpin["spec"] = map[string]any{"podTemplate": map[string]any{"spec": map[string]any{"affinity": nil}}}
	}
	if err := p.patchSandbox(ctx, k.Namespace, name, unpin); err != nil {
		p.log.Warn("unpinning a resumed agent-sandbox Sandbox", "pod", key(k.Namespace, k.Name), "err", err)
	}
	p.log.Info("woke a resumed agent-sandbox Sandbox's sandbox", "pod", key(k.Namespace, k.Name), "sandbox", info.SandboxID)
	return api.CreateResponse{SandboxID: info.SandboxID, Image: info.Image}, true
}

// patchSandbox applies a JSON merge patch to Sandbox ns/name.
func (p *provider) patchSandbox(ctx context.Context, ns, name string, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = p.dyn.Resource(sandboxesGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// sweepHibernated stops, every sweepInterval until ctx ends, the
// sandboxes this node hibernated for Sandboxes that are gone (deleted
// while suspended): no Pod is left to stop them.
func (p *provider) sweepHibernated(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(sweepInterval):
			p.stopOrphans(ctx)
		}
	}
}

// stopOrphans is one sweep of sweepHibernated.
func (p *provider) stopOrphans(ctx context.Context) {
	if p.dyn == nil {
		return
	}
	list, err := functions.Call[api.ListResponse](onNode(ctx), p.o.Table, api.FnList, api.ListRequest{State: []string{"paused"}})
	if err != nil {
		return
	}
	for _, s := range list.Sandboxes {
		uid, name := s.Metadata[MetaAgentSandbox], s.Metadata[MetaAgentSandboxName]
		ns, n, ok := strings.Cut(name, "/")
		if uid == "" || !ok {
			continue
		}
		sb, err := p.dyn.Resource(sandboxesGVR).Namespace(ns).Get(ctx, n, metav1.GetOptions{})
		if k8serrors.IsNotFound(err) || (err == nil && string(sb.GetUID()) != uid) {
			p.log.Info("stopping the hibernated sandbox of a deleted agent-sandbox Sandbox", "sandbox_object", name, "sandbox", s.SandboxID)
			p.stopSandbox(ctx, s.SandboxID)
		}
	}
}
