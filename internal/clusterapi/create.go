package clusterapi

// sandbox::create in cluster mode: a Pod in the owner's namespace, which
// the scheduler places and the node it lands on runs (internal/kubenode),
// answered once the Pod is Ready.

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/kubenode"
)

// containerName is the one container of a cluster API Pod.
const containerName = "sandbox"

// Create is sandbox::create in cluster mode (functions.ClusterCreator):
// the sandbox as a Pod in the caller's namespace, made on first use,
// answered once the scheduler placed it and it is Ready, its id the
// sandbox's on the node that holds it. A node's own create for a Pod it
// runs is left to the daemon (handled false).
func (a *API) Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, bool, error) {
	if kubenode.IsOnNode(ctx) {
		return api.CreateResponse{}, false, nil
	}
	client, _ := a.kube()
	if client == nil {
		return api.CreateResponse{}, true, errdefs.New(errdefs.CodeShuttingDown, "this node has not joined its cluster yet")
	}
	owner := auth.OwnerFrom(ctx)
	ns, err := a.namespace(ctx, client, owner)
	if err != nil {
		return api.CreateResponse{}, true, err
	}
	k, err := a.pod(ns, owner, req)
	if err != nil {
		return api.CreateResponse{}, true, err
	}
	made, err := client.CoreV1().Pods(ns).Create(ctx, k, metav1.CreateOptions{})
	if err != nil {
		return api.CreateResponse{}, true, apiError("creating the sandbox's Pod", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(a.o.Config.Cluster.CreateTimeoutSecs)*time.Second)
	defer cancel()
	ready, err := awaitReady(wctx, client, made)
	if err != nil {
		// Nothing is left of a create that failed.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer dcancel()
		if derr := client.CoreV1().Pods(ns).Delete(dctx, made.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			a.o.Logger.Warn("deleting a failed create's Pod", "pod", ns+"/"+made.Name, "err", derr)
		}
		return api.CreateResponse{}, true, err
	}
	cs := ready.Status.ContainerStatuses[0]
	id := strings.TrimPrefix(cs.ContainerID, kubenode.ContainerIDPrefix)
	a.remember(id, ready.Spec.NodeName)
	return api.CreateResponse{SandboxID: id, Image: cs.ImageID, Runtime: cmp.Or(req.Runtime, a.o.Config.DefaultRuntime)}, true, nil
}

// namespace is owner's namespace, made with its default service account
// (which a Pod needs) on first use.
func (a *API) namespace(ctx context.Context, client kubernetes.Interface, owner string) (string, error) {
	ns := kubenode.OwnerNamespace(a.o.Config.Cluster.NamespacePrefix, owner)
	a.mu.Lock()
	done := a.namespaces[ns]
	a.mu.Unlock()
	if done {
		return ns, nil
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels:      map[string]string{kubenode.LabelAPI: "true", kubenode.LabelOwner: kubenode.OwnerLabel(owner)},
		Annotations: map[string]string{kubenode.AnnotationOwner: owner}}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", apiError("creating the owner's namespace "+ns, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", apiError("creating the default service account of "+ns, err)
	}
	if err := a.ensureQuota(ctx, client, ns, owner); err != nil { // item 4
		return "", err
	}
	a.mu.Lock()
	a.namespaces[ns] = true
	a.mu.Unlock()
	return ns, nil
}

// pod is the Pod of a create: the shape the scheduler places (cpu and
// memory requests, the runtime's node label, the hutch nodes' taints
// tolerated), the owner in its labels and annotations, and the whole
// request, hutch's options a Pod cannot express, in an annotation the
// node creates the sandbox from.
func (a *API) pod(ns, owner string, req api.CreateRequest) (*corev1.Pod, error) {
	cfg := a.o.Config
	body, err := json.Marshal(req)
	if err != nil {
		return nil, errdefs.New(errdefs.CodeInternal, "encoding the create: %v", err)
	}
	cpus, mem := cmp.Or(req.CPUs, uint32(cfg.DefaultCPUs)), cmp.Or(req.MemoryMB, uint32(cfg.DefaultMemoryMB))
	selector := map[string]string{kubenode.LabelNode: "true"}
	if req.Runtime != "" {
		selector[kubenode.LabelRuntimePrefix+req.Runtime] = "true"
	}
	taints := cfg.Cluster.Taints
	if len(taints) == 0 {
		taints = []string{config.DefaultTaint}
	}
	var tolerations []corev1.Toleration
	for _, t := range taints {
		k, v, e, err := config.ParseTaint(t)
		if err != nil {
			return nil, errdefs.New(errdefs.CodeInternal, "cluster.taints: %v", err)
		}
		tolerations = append(tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpEqual, Value: v, Effect: corev1.TaintEffect(e)})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sb-", Namespace: ns,
			Labels:      map[string]string{kubenode.LabelAPI: "true", kubenode.LabelOwner: kubenode.OwnerLabel(owner)},
			Annotations: map[string]string{kubenode.AnnotationOwner: owner, kubenode.AnnotationCreate: string(body)}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: containerName, Image: cmp.Or(req.Image, cfg.MCPDefaultImage, "default"),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(int64(cpus), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(mem)<<20, resource.BinarySI),
				}}}},
			NodeSelector:                 selector,
			Tolerations:                  tolerations,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr(false),
			EnableServiceLinks:           ptr(false),
		},
	}, nil
}

// awaitReady watches Pod k until it is Running and Ready with its
// sandbox, or ended (the node's reason), or ctx ends.
func awaitReady(ctx context.Context, client kubernetes.Interface, k *corev1.Pod) (*corev1.Pod, error) {
	pods := client.CoreV1().Pods(k.Namespace)
	last := k
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + k.Name, ResourceVersion: last.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return nil, waitError(last)
			}
			return nil, apiError("watching the sandbox's Pod", err)
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				w.Stop()
				return nil, errdefs.New(errdefs.CodeBootFailed, "the sandbox's Pod %s/%s was deleted while it started", k.Namespace, k.Name)
			}
			last = p
			if done, err := readyOrEnded(p); done {
				w.Stop()
				return p, err
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, waitError(last)
		}
	}
}

// readyOrEnded says whether Pod p is Ready with its sandbox (nil) or has
// ended (its reason as the error).
func readyOrEnded(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return true, errdefs.New(errdefs.CodeBootFailed, "the sandbox's Pod on node %s ended: %s %s", cmp.Or(p.Spec.NodeName, "(none)"), p.Status.Reason, p.Status.Message)
	case corev1.PodRunning:
		cs := p.Status.ContainerStatuses
		if len(cs) == 1 && cs[0].Ready && strings.HasPrefix(cs[0].ContainerID, kubenode.ContainerIDPrefix) {
			return true, nil
		}
	}
	return false, nil
}

// waitError is a create that ran out of time (or was cancelled), saying
// where its Pod was last seen.
func waitError(p *corev1.Pod) error {
	where := "not placed by the scheduler"
	if p.Spec.NodeName != "" {
		where = "on node " + p.Spec.NodeName + ", " + string(p.Status.Phase)
	}
	return errdefs.New(errdefs.CodeCapacity, "the sandbox's Pod %s/%s was not Ready within cluster.create_timeout_secs (%s)", p.Namespace, p.Name, where)
}

// apiError is an apiserver's refusal of what doing did, with its reason:
// a quota is S401, anything else S500.
func apiError(doing string, err error) error {
	code := errdefs.CodeInternal
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
		code = errdefs.CodeQuota
	}
	return errdefs.New(code, "%s: %v", doing, err)
}

func ptr[T any](v T) *T { return &v }
