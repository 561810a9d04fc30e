package kubenode

// issue 36: Pods the cluster API made (internal/clusterapi). A create on
// any node becomes a Pod in the owner's namespace; the node the scheduler
// binds it to makes its sandbox for that owner, from the create's request
// the Pod carries, and reports the sandbox's id as the container's.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Labels and annotations of the cluster API's Pods and of hutch Nodes.
const (
	// LabelAPI "true" marks a Pod the cluster API made for a create.
	LabelAPI = "hutch.dev/api"
	// LabelOwner is the owner, as far as a label value can say it (the
	// exact owner is AnnotationOwner); the owner's namespace carries it
	// too.
	LabelOwner = "hutch.dev/owner"
	// AnnotationOwner is the exact owner of a cluster API Pod or
	// namespace.
	AnnotationOwner = "hutch.dev/owner"
	// AnnotationCreate is the create's request (JSON, api.CreateRequest):
	// hutch's options a Pod cannot express.
	AnnotationCreate = "hutch.dev/create"
	// AnnotationAPIURL on a Node is where the other nodes reach its API.
	AnnotationAPIURL = "hutch.dev/api-url"
)

// ContainerIDPrefix + a sandbox id is a hutch Pod's container id.
const ContainerIDPrefix = "hutch://"

// OwnerNamespace is owner's namespace: prefix + the owner, lowercased,
// with . _ @ as -; an owner that does not map one to one (changed, too
// long, or the anonymous "") gets a digest of itself appended, so that no
// two owners share a namespace.
func OwnerNamespace(prefix, owner string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, owner)
	if owner == "" {
		name = "anonymous"
	}
	if name == owner && len(prefix)+len(name) <= 63 && !strings.HasSuffix(name, "-") {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(owner))
	name = strings.TrimRight(name[:min(len(name), 63-len(prefix)-9)], "-")
	return prefix + name + "-" + hex.EncodeToString(sum[:4])
}

// OwnerLabel is owner as a label value: what is not a label's character
// (@) becomes _, and it is cut to 63 characters.
func OwnerLabel(owner string) string {
	l := strings.ReplaceAll(owner, "@", "_")
	return strings.TrimRight(l[:min(len(l), 63)], "._-")
}

type onNodeKey struct{}

// onNode marks ctx as the node's own call for a Pod: the cluster API
// leaves its create to the node (IsOnNode) instead of making a Pod of it.
func onNode(ctx context.Context) context.Context { return context.WithValue(ctx, onNodeKey{}, true) }

// IsOnNode says ctx is a node's own call for a Pod it runs.
func IsOnNode(ctx context.Context) bool { v, _ := ctx.Value(onNodeKey{}).(bool); return v }

// apiPod reads a cluster API Pod: its owner and the create's request; ok
// is false for any other Pod; a Pod whose namespace is not its owner's,
// or whose request does not decode, is refused (bad).
func (p *provider) apiPod(k *corev1.Pod) (owner string, req api.CreateRequest, ok bool, bad string) {
	if k.Labels[LabelAPI] != "true" {
		return "", req, false, ""
	}
	owner, has := k.Annotations[AnnotationOwner]
	if !has || k.Namespace != OwnerNamespace(p.o.Config.Cluster.NamespacePrefix, owner) {
		return "", req, true, fmt.Sprintf("a cluster API Pod runs in its owner's namespace (%s is not %q's)", k.Namespace, owner)
	}
	if err := functions.Decode(json.RawMessage(k.Annotations[AnnotationCreate]), &req); err != nil {
		return "", req, true, "annotation " + AnnotationCreate + ": " + err.Error()
	}
	return owner, req, true, ""
}

// asOwner is ctx acting for the owner of Pod ns/name's sandbox.
func (p *provider) asOwner(ctx context.Context, ns, name string) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pd, ok := p.pods[key(ns, name)]; ok {
		return auth.WithOwner(ctx, pd.owner)
	}
	return ctx
}

// mergeMeta is the create's metadata with the node's keys (the Pod's
// name and uid) over it.
func mergeMeta(asked, node map[string]string) map[string]string {
	out := make(map[string]string, len(asked)+len(node))
	for k, v := range asked {
		out[k] = v
	}
	for k, v := range node {
		out[k] = v
	}
	return out
}

// deleteAPIPod deletes cluster API Pod ko (namespace/name) from the API
// once its sandbox stopped (a stop through the API, idle, its lifetime):
// its owner's namespace does not keep ended Pods.
func (p *provider) deleteAPIPod(ctx context.Context, ko string) {
	ns, name, _ := strings.Cut(ko, "/")
	// At once: the sandbox has stopped already.
	if err := p.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
		p.log.Warn("deleting a stopped sandbox's Pod", "pod", ko, "err", err)
	}
}
