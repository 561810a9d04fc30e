package integration

// issue 36: 2 — kubernetes-sigs/agent-sandbox's own controller (v0.5.0,
// built unmodified by `make kube-deps`) and its CRDs drive Pods onto hutch
// nodes: a SandboxTemplate tolerating the hutch taint with the gvisor
// RuntimeClass, a SandboxWarmPool of 3 of it, and a SandboxClaim that
// becomes a Ready Sandbox from the pool, with its podIPs and nodeName;
// an exec into it; the claim deleted stops the sandbox and the pool
// refills. Two nodes on a network of their own (apart from TestCluster's).

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/testutil/kubetest"
)

// agentSandboxNet is TestClusterAgentSandbox's network.
var agentSandboxNet = clusterNet{bridge: "as-kbr", subnet: "10.235.72.", netnsPrefix: "as-kube-", vethPrefix: "as-kv"}

// agent-sandbox's v1beta1 resources.
var (
	asSandboxes = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
	asTemplates = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	asClaims    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	asPools     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

func TestClusterAgentSandbox(t *testing.T) {
	testutil.RequiresIntegration(t)
	kubetest.RequiresAgentSandbox(t)
	binaries(t)
	nodes := agentSandboxNet.make(t, 2)
	cp := kubetest.StartAt(t, agentSandboxNet.host())
	cp.StartAgentSandbox()
	kc := cp.Client
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "gvisor"}
	if _, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"hutch-as-0", "hutch-as-1"}
	daemons := make([]*daemon, len(names))
	for i := range names {
		// Private ranges open to sandboxes: the template's policy is what
		// refuses them (the egress subtest).
		daemons[i] = startClusterDaemon(t, cp, names[i], nodes[i], "block_private_networks: false\n")
	}
	testutil.EventuallyNil(t, 2*time.Minute, func() error { return nodesReady(ctx, kc, names, true) }, "the hutch Nodes Ready")
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := kc.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "the default service account")

	res := func(gvr schema.GroupVersionResource) dynamic.ResourceInterface {
		return dyn.Resource(gvr).Namespace(clusterNS)
	}
	create := func(gvr schema.GroupVersionResource, obj map[string]any) {
		t.Helper()
		if _, err := res(gvr).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", gvr.Resource, err)
		}
	}
	// The template: hutch's taint tolerated, the gvisor RuntimeClass, a
	// network (the Pod IP agent-sandbox's Ready waits for).
	create(asTemplates, map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": "python"},
		"spec": map[string]any{"podTemplate": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{kubenode.AnnotationNetwork: "true"}},
			"spec": map[string]any{
				"runtimeClassName": "gvisor",
				"tolerations":      []any{map[string]any{"key": "hutch.dev/sandbox", "operator": "Exists", "effect": "NoSchedule"}},
				// The main process counts in its memory (counterServer).
				"containers": []any{map[string]any{"name": "main", "image": "python", "command": []any{"python3", "-c", counterServer}}},
			},
		}},
	})
	create(asPools, map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": "pool"},
		"spec":     map[string]any{"replicas": int64(3), "sandboxTemplateRef": map[string]any{"name": "python"}},
	})
	t.Cleanup(func() {
		// The pool's sandboxes go with it (their owner), and their Pods
		// with them: every node's sandboxes stop.
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer ccancel()
		_ = res(asClaims).DeleteCollection(cctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = res(asPools).Delete(cctx, "pool", metav1.DeleteOptions{})
		if !testutil.Poll(2*time.Minute, func() bool { return liveSandboxes(cctx, daemons) == 0 }) {
			t.Errorf("sandboxes still live after the pool and claims were deleted: %d", liveSandboxes(cctx, daemons))
		}
	})

	// Three Ready Sandboxes, their Pods Running on hutch nodes.
	var pool []string
	testutil.EventuallyNil(t, 4*time.Minute, func() error {
		var err error
		pool, err = readySandboxes(ctx, kc, res(asSandboxes), names)
		if err == nil && len(pool) != 3 {
			err = fmt.Errorf("%d Ready sandboxes (%v), want 3", len(pool), pool)
		}
		return err
	}, "the warm pool's 3 Sandboxes Ready")

	create(asClaims, map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
		"metadata": map[string]any{"name": "claim"},
		"spec":     map[string]any{"warmPoolRef": map[string]any{"name": "pool"}},
	})
	var claimed string
	testutil.EventuallyNil(t, 2*time.Minute, func() error {
		c, err := res(asClaims).Get(ctx, "claim", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !condTrue(c, "Ready") {
			return fmt.Errorf("claim not Ready: %v", c.Object["status"])
		}
		claimed, _, _ = unstructured.NestedString(c.Object, "status", "sandbox", "name")
		if ips, _, _ := unstructured.NestedStringSlice(c.Object, "status", "sandbox", "podIPs"); len(ips) == 0 {
			return fmt.Errorf("claim Ready without podIPs: %v", c.Object["status"])
		}
		return nil
	}, "the claim Ready")
	if !slices.Contains(pool, claimed) {
		t.Fatalf("the claim's sandbox %q is not one of the warm pool's %v", claimed, pool)
	}
	sb, err := res(asSandboxes).Get(ctx, claimed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podName := sandboxPod(sb)
	pod, err := kc.CoreV1().Pods(clusterNS).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, _, _ := unstructured.NestedStringSlice(sb.Object, "status", "podIPs")
	node, _, _ := unstructured.NestedString(sb.Object, "status", "nodeName")
	if len(ips) != 1 || ips[0] != pod.Status.PodIP || node != pod.Spec.NodeName || !slices.Contains(names, node) {
		t.Fatalf("the claimed Sandbox's podIPs %v, nodeName %q; its Pod's IP %s on %s", ips, node, pod.Status.PodIP, pod.Spec.NodeName)
	}

	t.Run("exec", func(t *testing.T) {
		// As kubectl exec: through the apiserver and the node's kubelet
		// API, into the claimed sandbox; its address is the Pod IP.
		var out bytes.Buffer
		if err := execPod(ctx, cp, podName, []string{"sh", "-c", "echo claimed ok"}, nil, &out, nil); err != nil || strings.TrimSpace(out.String()) != "claimed ok" {
			t.Fatalf("exec into the claimed sandbox: %q %v", out.String(), err)
		}
		out.Reset()
		if err := execPod(ctx, cp, podName, []string{"python3", "-c", "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('" + agentSandboxNet.host().String() + "', 9)); print(s.getsockname()[0])"}, nil, &out, nil); err != nil {
			t.Fatalf("exec into the claimed sandbox: %v", err)
		}
		if got := strings.TrimSpace(out.String()); got != ips[0] {
			t.Errorf("the sandbox sends from %q; its Sandbox's podIPs %v", got, ips)
		}
	})

	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, kubenode.ContainerIDPrefix)
	holder := daemons[slices.Index(names, node)]
	setMode := func(t *testing.T, mode string) {
		t.Helper()
		patch := []byte(`{"spec":{"operatingMode":"` + mode + `"}}`)
		if _, err := res(asSandboxes).Patch(ctx, claimed, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// suspend suspends the claimed Sandbox and waits for its sandbox to
	// be hibernated on its node.
	suspend := func(t *testing.T) {
		t.Helper()
		setMode(t, "Suspended")
		testutil.EventuallyNil(t, 2*time.Minute, func() error {
			sb, err := res(asSandboxes).Get(ctx, claimed, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !condTrue(sb, "Suspended") || sb.GetAnnotations()[kubenode.AnnotationHibernatedOn] != node {
				return fmt.Errorf("sandbox %s not suspended on %s: %v %v", claimed, node, sb.GetAnnotations(), sb.Object["status"])
			}
			if info, err := client.New(holder.url, "").Get(ctx, id); err != nil || info.State != "paused" {
				return fmt.Errorf("the hibernated sandbox %s: %+v %v", id, info, err)
			}
			return nil
		}, "the Sandbox suspended and its sandbox hibernated")
	}

	t.Run("egress", func(t *testing.T) {
		// The template's NetworkPolicy (agent-sandbox's default: the
		// public internet, private ranges refused) is the sandbox's
		// egress policy on its node: the apiserver, on a private address
		// the node reaches, is refused to it.
		info, err := client.New(holder.url, "").Get(ctx, id)
		if err != nil || info.Egress == nil || !slices.Contains(info.Egress.AllowOut, "0.0.0.0/0") || !slices.Contains(info.Egress.DenyOut, "10.0.0.0/8") {
			t.Fatalf("the claimed sandbox's egress policy: %+v %v", info.Egress, err)
		}
		u, err := url.Parse(cp.URL)
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(u.Host)
		var out bytes.Buffer
		script := "import socket\ntry:\n    socket.create_connection(('" + host + "', " + port + "), timeout=3); print('connected')\nexcept OSError:\n    print('refused')"
		if err := execPod(ctx, cp, podName, []string{"python3", "-c", script}, nil, &out, nil); err != nil || strings.TrimSpace(out.String()) != "refused" {
			t.Errorf("the apiserver at %s from the claimed sandbox: %q %v, want refused", u.Host, out.String(), err)
		}
		// Refused by hutch's egress policy: lifted, the apiserver answers.
		hc := client.New(holder.url, "")
		if _, err := hc.UpdateNetwork(ctx, id, api.EgressPolicy{}); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if err := execPod(ctx, cp, podName, []string{"python3", "-c", script}, nil, &out, nil); err != nil || strings.TrimSpace(out.String()) != "connected" {
			t.Errorf("the apiserver from the claimed sandbox, its policy lifted: %q %v", out.String(), err)
		}
		if _, err := hc.UpdateNetwork(ctx, id, *info.Egress); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		// Suspended, agent-sandbox deletes the Pod: hutch hibernates its
		// sandbox (memory kept) instead of stopping it, and the Pod made
		// again at Running wakes it on the same node.
		for want := 1; want <= 2; want++ {
			if n := podCount(t, ctx, cp, podName); n != want {
				t.Fatalf("count %d, want %d", n, want)
			}
		}
		suspend(t)
		setMode(t, "Running")
		testutil.EventuallyNil(t, 2*time.Minute, func() error {
			sb, err := res(asSandboxes).Get(ctx, claimed, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !condTrue(sb, "Ready") || sb.GetAnnotations()[kubenode.AnnotationHibernatedOn] != "" {
				return fmt.Errorf("sandbox %s not Ready again: %v %v", claimed, sb.GetAnnotations(), sb.Object["status"])
			}
			p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, sandboxPod(sb), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName != node || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ContainerID != kubenode.ContainerIDPrefix+id {
				return fmt.Errorf("the resumed Pod on %q, containers %v; want %s's sandbox %s", p.Spec.NodeName, p.Status.ContainerStatuses, node, id)
			}
			if aff, found, _ := unstructured.NestedMap(sb.Object, "spec", "podTemplate", "spec", "affinity"); found && len(aff) > 0 {
				return fmt.Errorf("the resumed Sandbox still pinned: %v", aff)
			}
			return nil
		}, "the Sandbox resumed on its sandbox")
		if n := podCount(t, ctx, cp, podName); n != 3 {
			t.Errorf("after suspend and resume the counter gave %d, want 3", n)
		}
	})

	t.Run("pool refills", func(t *testing.T) {
		testutil.EventuallyNil(t, 4*time.Minute, func() error {
			ready, err := readySandboxes(ctx, kc, res(asSandboxes), names)
			if err == nil && len(ready) != 4 {
				err = fmt.Errorf("%d Ready sandboxes (%v), want the claimed one and 3 in the pool", len(ready), ready)
			}
			return err
		}, "the pool refilled")
	})

	t.Run("claim deleted", func(t *testing.T) {
		// Deleted while suspended: no Pod is left, the node stops the
		// hibernated sandbox of a Sandbox gone. (A running Sandbox's
		// deletion stops its sandbox with its Pod: the pool's, at the end.)
		suspend(t)
		if err := res(asClaims).Delete(ctx, "claim", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The claim owns its Sandbox: the garbage collector deletes it.
		testutil.EventuallyNil(t, 2*time.Minute, func() error {
			if _, err := res(asSandboxes).Get(ctx, claimed, metav1.GetOptions{}); !k8serrors.IsNotFound(err) {
				return fmt.Errorf("sandbox %s: %v", claimed, err)
			}
			if _, err := kc.CoreV1().Pods(clusterNS).Get(ctx, podName, metav1.GetOptions{}); !k8serrors.IsNotFound(err) {
				return fmt.Errorf("pod %s: %v", podName, err)
			}
			for _, d := range daemons {
				info, err := client.New(d.url, "").Get(ctx, id)
				if err == nil && info.State != "stopped" {
					return fmt.Errorf("the claimed sandbox %s is %s", id, info.State)
				}
			}
			return nil
		}, "the claimed Sandbox, its Pod and its sandbox gone")
		if n := liveSandboxes(ctx, daemons); n != 3 {
			t.Errorf("%d sandboxes live on the nodes, want the pool's 3", n)
		}
	})
}

// podCount asks the counter of Pod name's main process for its next
// number, through an exec.
func podCount(t *testing.T, ctx context.Context, cp *kubetest.ControlPlane, name string) int {
	t.Helper()
	var out bytes.Buffer
	if err := execPod(ctx, cp, name, []string{"python3", "-c", counterClient}, nil, &out, nil); err != nil {
		t.Fatalf("asking Pod %s's counter: %v", name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("Pod %s's counter answered %q", name, out.String())
	}
	return n
}

// readySandboxes lists the Sandboxes whose Ready condition is True, each
// checked against its Pod: Running and Ready on one of nodes, its IP the
// Sandbox's podIPs, its nodeName the Sandbox's.
func readySandboxes(ctx context.Context, kc kubernetes.Interface, sbs dynamic.ResourceInterface, nodes []string) ([]string, error) {
	list, err := sbs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var ready []string
	for _, sb := range list.Items {
		if !condTrue(&sb, "Ready") {
			continue
		}
		pod, err := kc.CoreV1().Pods(sb.GetNamespace()).Get(ctx, sandboxPod(&sb), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("the Pod of Ready sandbox %s: %w", sb.GetName(), err)
		}
		ips, _, _ := unstructured.NestedStringSlice(sb.Object, "status", "podIPs")
		node, _, _ := unstructured.NestedString(sb.Object, "status", "nodeName")
		if pod.Status.Phase != corev1.PodRunning || !podReady(pod) || !slices.Contains(nodes, pod.Spec.NodeName) ||
			len(ips) == 0 || ips[0] != pod.Status.PodIP || node != pod.Spec.NodeName {
			return nil, fmt.Errorf("sandbox %s Ready with podIPs %v on %q; its Pod %s on %q with IP %q", sb.GetName(), ips, node, pod.Status.Phase, pod.Spec.NodeName, pod.Status.PodIP)
		}
		ready = append(ready, sb.GetName())
	}
	return ready, nil
}

// sandboxPod is the name of Sandbox sb's Pod: the one its annotation
// tracks, else the Sandbox's own (agent-sandbox's rule).
func sandboxPod(sb *unstructured.Unstructured) string {
	if n := sb.GetAnnotations()["agents.x-k8s.io/pod-name"]; n != "" {
		return n
	}
	return sb.GetName()
}

// condTrue says o's status condition typ is True.
func condTrue(o *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// liveSandboxes counts the sandboxes running or paused (hibernated) on
// the daemons (-1 when one does not answer).
func liveSandboxes(ctx context.Context, daemons []*daemon) int {
	n := 0
	for _, d := range daemons {
		var out api.ListResponse
		if err := client.New(d.url, "").Call(ctx, api.FnList, api.ListRequest{State: []string{"running", "paused"}}, &out); err != nil {
			return -1
		}
		n += len(out.Sandboxes)
	}
	return n
}
