package integration

// issue 35: a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler from make kube-deps) and three
// hutch daemons joined to it as nodes, each in a network namespace of its
// own with its own address and data dir (cluster_netns_test.go); the
// apiserver listens on the host's end of their bridge.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/testutil/kubetest"
)

// clusterNodes is how many hutch daemons join the test cluster.
const clusterNodes = 3

// clusterPods is how many long-running Pods the scheduler spreads.
const clusterPods = 12

// lostGrace is the cluster side's cluster.lost_grace_secs in the test.
const lostGrace = 3 * time.Second

// reattachNode is the node whose Pods' sandboxes outlive its daemon for
// reattachGrace (issue 35).
const (
	reattachNode  = 0
	reattachGrace = 45 * time.Second
)

// clusterNS is the test's namespace.
const clusterNS = "default"

func TestCluster(t *testing.T) {
	testutil.RequiresIntegration(t)
	binaries(t) // built before the clock of any wait starts
	nodes := clusterNetwork(t, clusterNodes)
	cp := kubetest.StartAt(t, net.ParseIP(clusterHost))
	kc := cp.Client
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for name, handler := range map[string]string{"gvisor": "gvisor", "wasm": "wasm"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Three daemons, each a node with its own address and serving
	// certificate.
	daemons := make([]*daemon, clusterNodes)
	names := make([]string, clusterNodes)
	for i := range daemons {
		names[i] = "hutch-test-" + strconv.Itoa(i)
		extra := ""
		if i == reattachNode { // issue 35: its Pods' sandboxes outlive it
			extra = fmt.Sprintf("  reattach_grace_secs: %d\n", int(reattachGrace.Seconds()))
		}
		daemons[i] = startClusterDaemon(t, cp, names[i], nodes[i], extra)
	}
	testutil.EventuallyNil(t, 2*time.Minute, func() error { return nodesReady(ctx, kc, names, true) }, "the three hutch Nodes Ready")
	node, err := kc.CoreV1().Nodes().Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNode(t, node)

	// Pods need the namespace's default service account, which the
	// controller-manager makes.
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := kc.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "the default service account")

	// 12 Pods that tolerate the taint, spread by the scheduler.
	var pods []string
	for i := range clusterPods {
		name := "sb-" + strconv.Itoa(i)
		p := clusterPod(name, "echo started; i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done")
		if i%2 == 0 {
			p.Spec.RuntimeClassName = ptrTo("gvisor")
		}
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, name)
	}
	perNode := map[string]int{}
	testutil.EventuallyNil(t, 5*time.Minute, func() error {
		clear(perNode)
		for _, name := range pods {
			p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning || !podReady(p) {
				return fmt.Errorf("pod %s is %s (%s)", name, p.Status.Phase, p.Status.Message)
			}
			perNode[p.Spec.NodeName]++
		}
		return nil
	}, "the %d Pods Running and Ready", clusterPods)
	for _, n := range names {
		if perNode[n] == 0 {
			t.Errorf("the scheduler placed no Pod on %s: %v", n, perNode)
		}
	}
	t.Logf("Pods per node: %v", perNode)

	t.Run("exec", func(t *testing.T) {
		var out bytes.Buffer
		if err := execPod(ctx, cp, pods[0], []string{"echo", "hello from a pod"}, nil, &out, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != "hello from a pod" {
			t.Fatalf("exec echoed %q", got)
		}
		// A terminal, resized to 40x100: the command waits for the
		// new size to reach it.
		out.Reset()
		script := `for i in $(seq 100); do [ "$(stty size)" = "40 100" ] && echo resized && exit 0; sleep 0.1; done; stty size; exit 1`
		size := &sizeQueue{sizes: []remotecommand.TerminalSize{{Width: 100, Height: 40}}}
		if err := execPod(ctx, cp, pods[0], []string{"sh", "-c", script}, strings.NewReader(""), &out, size); err != nil {
			t.Fatalf("exec with a terminal: %v (%q)", err, out.String())
		}
		if !strings.Contains(out.String(), "resized") {
			t.Fatalf("the terminal was not resized: %q", out.String())
		}
		// stdin reaches the command; its exit code comes back.
		out.Reset()
		err := execPod(ctx, cp, pods[1], []string{"sh", "-c", "read line; echo got $line; exit 7"}, strings.NewReader("input\n"), &out, nil)
		if ce, ok := err.(interface{ ExitStatus() int }); !ok || ce.ExitStatus() != 7 {
			t.Fatalf("exec's exit: %v, want code 7", err)
		}
		if got := strings.TrimSpace(out.String()); got != "got input" {
			t.Fatalf("exec read %q from stdin", got)
		}
	})

	t.Run("logs follow", func(t *testing.T) {
		// Ticks written after what the logs held when the stream opened
		// show it follows.
		lctx, lcancel := context.WithTimeout(ctx, time.Minute)
		defer lcancel()
		held, err := kc.CoreV1().Pods(clusterNS).GetLogs(pods[2], &corev1.PodLogOptions{}).DoRaw(lctx)
		if err != nil {
			t.Fatal(err)
		}
		last := -1
		for line := range strings.Lines(string(held)) {
			fmt.Sscanf(line, "tick %d", &last)
		}
		if last < 0 || !strings.HasPrefix(string(held), "started\n") {
			t.Fatalf("logs without -f: %q", held)
		}
		// --tail: the last two lines held.
		tail, err := kc.CoreV1().Pods(clusterNS).GetLogs(pods[2], &corev1.PodLogOptions{TailLines: ptrTo(int64(2))}).DoRaw(lctx)
		if err != nil {
			t.Fatal(err)
		}
		var a, b int
		if n, _ := fmt.Sscanf(string(tail), "tick %d\ntick %d\n", &a, &b); n != 2 || b != a+1 || a < last-1 || strings.Count(string(tail), "\n") != 2 {
			t.Fatalf("logs --tail=2 after tick %d: %q", last, tail)
		}
		// --since is refused (400): the output carries no times.
		if _, err := kc.CoreV1().Pods(clusterNS).GetLogs(pods[2], &corev1.PodLogOptions{SinceSeconds: ptrTo(int64(10))}).DoRaw(lctx); !apierrors.IsBadRequest(err) {
			t.Fatalf("logs --since: %v, want a refusal", err)
		}
		rc, err := kc.CoreV1().Pods(clusterNS).GetLogs(pods[2], &corev1.PodLogOptions{Follow: true, TailLines: ptrTo(int64(1))}).Stream(lctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "tick %d", &n); err == nil && n >= last+2 {
				return
			}
		}
		t.Fatalf("logs -f ended before following two more ticks: %v", sc.Err())
	})

	t.Run("port-forward", func(t *testing.T) {
		p := clusterPod("web", "")
		p.Spec.Containers[0].Command = []string{"python3", "-m", "http.server", "8080"}
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		// A Pod that asks for a network has its sandbox's address as its IP.
		p.Annotations = map[string]string{kubenode.AnnotationNetwork: "true"}
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.EventuallyNil(t, 3*time.Minute, func() error {
			got, err := kc.CoreV1().Pods(clusterNS).Get(ctx, "web", metav1.GetOptions{})
			if err == nil && !podReady(got) {
				err = fmt.Errorf("pod web is %s", got.Status.Phase)
			}
			return err
		}, "Pod web Ready")
		// A first connection refused would end the forward (client-go
		// stops on a stream's error): the server listens first.
		testutil.EventuallyNil(t, time.Minute, func() error {
			return execPod(ctx, cp, "web", []string{"python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/')"}, nil, io.Discard, nil)
		}, "the Pod's web server listening")
		web, err := kc.CoreV1().Pods(clusterNS).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var own bytes.Buffer
		// The address the sandbox sends from (a UDP connect sends nothing).
		if err := execPod(ctx, cp, "web", []string{"python3", "-c", `import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("192.0.2.1", 9)); print(s.getsockname()[0])`}, nil, &own, nil); err != nil {
			t.Fatal(err)
		}
		if ip := web.Status.PodIP; ip == "" || ip != strings.TrimSpace(own.String()) || len(web.Status.PodIPs) != 1 {
			t.Errorf("Pod IP %q (%v), the sandbox's own address %q", ip, web.Status.PodIPs, own.String())
		}
		if offline, err := kc.CoreV1().Pods(clusterNS).Get(ctx, pods[0], metav1.GetOptions{}); err != nil || offline.Status.PodIP != "" {
			t.Errorf("a Pod without a network: IP %q (%v)", offline.Status.PodIP, err)
		}
		local := portForward(t, cp, "web", 8080)
		testutil.EventuallyNil(t, time.Minute, func() error {
			resp, err := http.Get("http://" + local + "/")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Directory listing") {
				return fmt.Errorf("%s: %.200s", resp.Status, body)
			}
			return nil
		}, "the Pod's web server through kubectl port-forward's path")
	})

	t.Run("exit ends the pod", func(t *testing.T) {
		p := clusterPod("exits", "echo bye; exit 3")
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := awaitPodEnd(t, ctx, kc, "exits")
		cs := got.Status.ContainerStatuses
		if got.Status.Phase != corev1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
			t.Fatalf("a main process exiting 3: %s, %+v", got.Status.Phase, cs)
		}
	})

	t.Run("unknown runtime class", func(t *testing.T) {
		p := clusterPod("wasm", "true")
		p.Spec.RuntimeClassName = ptrTo("wasm")
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := awaitPodEnd(t, ctx, kc, "wasm")
		if got.Status.Phase != corev1.PodFailed || got.Status.Reason != kubenode.ReasonRuntimeClass || !strings.Contains(got.Status.Message, `"wasm"`) {
			t.Fatalf("a Pod of runtime class wasm: %s %s %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
	})

	t.Run("unsupported", func(t *testing.T) {
		// (privileged is refused by the apiserver itself here:
		// --allow-privileged is off.)
		p := clusterPod("probed", "true")
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := awaitPodEnd(t, ctx, kc, "probed")
		if got.Status.Phase != corev1.PodFailed || got.Status.Reason != kubenode.ReasonUnsupported || !strings.Contains(got.Status.Message, "probes") {
			t.Fatalf("a Pod with a probe: %s %s %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
	})

	t.Run("node lost", func(t *testing.T) {
		victim := 2
		lost := podsOn(t, ctx, kc, names[victim])
		if len(lost) == 0 {
			t.Fatalf("no Pod on %s", names[victim])
		}
		daemons[victim].kill9()
		testutil.EventuallyNil(t, kubetest.NodeMonitorGrace+time.Minute, func() error {
			return nodesReady(ctx, kc, names[victim:victim+1], false)
		}, "%s NotReady after kill -9", names[victim])
		testutil.EventuallyNil(t, lostGrace+time.Minute, func() error {
			if left := podsOn(t, ctx, kc, names[victim]); len(left) > 0 {
				return fmt.Errorf("%d Pods still on %s", len(left), names[victim])
			}
			return nil
		}, "the lost node's Pods force-deleted")
		// sandbox.lost: a Pod event, and in the leader's event log.
		evs, err := kc.CoreV1().Events(clusterNS).List(ctx, metav1.ListOptions{FieldSelector: "reason=SandboxLost"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) < len(lost) {
			t.Fatalf("%d SandboxLost events for %d lost Pods", len(evs.Items), len(lost))
		}
		recorded := 0
		for _, d := range daemons[:victim] {
			resp, err := d.c.ListEvents(ctx, api.EventsRequest{Type: kubenode.EventSandboxLost})
			if err != nil {
				t.Fatal(err)
			}
			recorded += len(resp.Events)
		}
		if recorded < len(lost) {
			t.Fatalf("%d %s events in the surviving daemons' logs for %d lost Pods", recorded, kubenode.EventSandboxLost, len(lost))
		}
		// Back again: the node is Ready, with nothing of the deleted
		// Pods running.
		daemons[victim].start()
		testutil.EventuallyNil(t, time.Minute, func() error { return nodesReady(ctx, kc, names[victim:victim+1], true) }, "%s Ready after its restart", names[victim])
	})

	t.Run("restart", func(t *testing.T) {
		// A daemon killed and restarted within the grace: hutch's
		// sandboxes die with their daemon (its crash watchdog stops
		// them), so none survives to be re-adopted and the node reports
		// each of its Pods failed with SandboxLost.
		victim := 1
		had := runningPodsOn(t, ctx, kc, names[victim])
		daemons[victim].kill9()
		daemons[victim].start()
		for _, name := range had {
			got := awaitPodEnd(t, ctx, kc, name)
			if got.Status.Phase != corev1.PodFailed || got.Status.Reason != kubenode.ReasonSandboxLost {
				t.Errorf("Pod %s after its node restarted: %s %s %q", name, got.Status.Phase, got.Status.Reason, got.Status.Message)
			}
		}
	})

	t.Run("re-adopt", func(t *testing.T) {
		// issue 35: a node with cluster.reattach_grace_secs killed and
		// restarted within the grace: its Pods' sandboxes outlive it (the
		// crash watchdog leaves them for the grace), the restarted daemon
		// adopts them, and the Pods stay Running, exec and logs working;
		// a networked Pod keeps its IP.
		victim := reattachNode
		kept := runningPodsOn(t, ctx, kc, names[victim])
		ips := map[string]string{}
		for _, name := range kept {
			if p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{}); err == nil {
				ips[name] = p.Status.PodIP
			}
		}
		daemons[victim].kill9()
		daemons[victim].start()
		testutil.EventuallyNil(t, time.Minute, func() error { return nodesReady(ctx, kc, names[victim:victim+1], true) }, "%s Ready after its restart", names[victim])
		for _, name := range kept {
			testutil.EventuallyNil(t, time.Minute, func() error {
				var out bytes.Buffer
				if err := execPod(ctx, cp, name, []string{"echo", "back"}, nil, &out, nil); err != nil {
					return err
				}
				if got := strings.TrimSpace(out.String()); got != "back" {
					return fmt.Errorf("exec echoed %q", got)
				}
				return nil
			}, "exec into Pod %s after its node restarted", name)
			got, err := kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != ips[name] {
				t.Errorf("Pod %s after its node restarted: %s %s %q, IP %q (was %q)", name, got.Status.Phase, got.Status.Reason, got.Status.Message, got.Status.PodIP, ips[name])
			}
			if ips[name] != "" {
				continue // the web server's, without ticks
			}
			logs, err := kc.CoreV1().Pods(clusterNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil || !strings.Contains(string(logs), "tick") {
				t.Errorf("logs of Pod %s after its node restarted: %v %q", name, err, safeTail(logs))
			}
		}
		// The adopted Pods are deleted here: the node's daemon, stopped by
		// SIGTERM at the test's end, would leave them to a restart for
		// the grace (TestClusterReattachSIGTERM tests that). With an hour's
		// grace period they leave the API only if their node removes them
		// once their sandboxes stopped, as a kubelet does.
		hour := int64(3600)
		for _, name := range kept {
			if err := kc.CoreV1().Pods(clusterNS).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &hour}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.EventuallyNil(t, 2*time.Minute, func() error {
			for _, name := range kept {
				if _, err := kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Pod %s: %v", name, err)
				}
			}
			list, err := daemons[victim].c.List(ctx)
			if err != nil {
				return err
			}
			for _, sb := range list.Sandboxes {
				if !sb.Stopped {
					return fmt.Errorf("sandbox %s still running", sb.SandboxID)
				}
			}
			return nil
		}, "the adopted Pods deleted and their sandboxes stopped")
	})
}

// runningPodsOn lists the Running Pods on node, failing t for none.
func runningPodsOn(t *testing.T, ctx context.Context, kc kubernetes.Interface, node string) []string {
	t.Helper()
	var had []string
	for _, name := range podsOn(t, ctx, kc, node) {
		if p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{}); err == nil && p.Status.Phase == corev1.PodRunning {
			had = append(had, name)
		}
	}
	if len(had) == 0 {
		t.Fatalf("no Pod running on %s", node)
	}
	return had
}

// safeTail is the last bytes of b, for a message.
func safeTail(b []byte) string { return string(b[max(0, len(b)-200):]) }

// startClusterDaemon starts a daemon joined to cp as node name, in the
// network namespace of node; its API and kubelet API listen on node's
// address.
func startClusterDaemon(t *testing.T, cp *kubetest.ControlPlane, name string, node clusterNode, extra string) *daemon {
	t.Helper()
	cert, key := cp.ServingCert(name, node.ip)
	cfg := baseConfig(fmt.Sprintf(`cluster:
  node_name: %s
  node_ip: %s
  kubelet_listen: %s
  tls_cert_file: %s
  tls_key_file: %s
  client_ca_file: %s
  lost_grace_secs: %d
%s`, name, node.ip, net.JoinHostPort(node.ip.String(), "10250"), cert, key, cp.CAFile, int(lostGrace.Seconds()), extra))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The API listens on the test's bridge, which only the host and the
	// test's namespaces reach: without tokens or TLS.
	listen := net.JoinHostPort(node.ip.String(), "0")
	d := &daemon{t: t, dataDir: filepath.Join(dir, "data"), cfgPath: cfgPath, netns: node.netns,
		serveArgs: []string{"--kubeconfig", cp.Kubeconfig, "--listen", listen, "--engine-listen", listen, "--insecure-no-auth", "--insecure-plaintext"}}
	d.start()
	t.Cleanup(func() {
		d.terminate()
		assertNoLeftovers(t, d.dataDir)
		var left []string
		if !testutil.Poll(30*time.Second, func() bool { left = netnsLeftovers(node.netns); return len(left) == 0 }) {
			t.Errorf("%s left in its namespace:\n  %s", name, strings.Join(left, "\n  "))
		}
		if t.Failed() {
			t.Logf("%s daemon log:\n%s", name, d.log)
		}
	})
	return d
}

// checkNode checks what a hutch Node says of itself.
func checkNode(t *testing.T, n *corev1.Node) {
	t.Helper()
	if n.Labels[kubenode.LabelNode] != "true" || n.Labels[kubenode.LabelRuntimePrefix+"gvisor"] != "true" {
		t.Errorf("Node labels %v lack hutch's", n.Labels)
	}
	// The node-lifecycle controller may add its own while the node joins.
	if !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
		return tn.Key == "hutch.dev/sandbox" && tn.Value == "true" && tn.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("Node taints %v lack hutch.dev/sandbox=true:NoSchedule", n.Spec.Taints)
	}
	if pods := n.Status.Allocatable.Pods().Value(); pods != 32 {
		t.Errorf("allocatable pods %d, want max_concurrent_sandboxes (32)", pods)
	}
	if n.Status.Allocatable.Cpu().IsZero() || n.Status.Allocatable.Memory().IsZero() {
		t.Errorf("allocatable %v lacks cpu or memory", n.Status.Allocatable)
	}
}

// nodesReady is nil when every node of names has Ready == ready.
func nodesReady(ctx context.Context, kc kubernetes.Interface, names []string, ready bool) error {
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	for _, name := range names {
		n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got := corev1.ConditionUnknown
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				got = c.Status
			}
		}
		if (got == corev1.ConditionTrue) != (want == corev1.ConditionTrue) {
			return fmt.Errorf("node %s Ready is %s", name, got)
		}
	}
	return nil
}

// clusterPod is a Pod for a hutch node running script as its main
// process.
func clusterPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterNS},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "python", Command: []string{"sh", "-c", script}}},
			Tolerations: []corev1.Toleration{{Key: "hutch.dev/sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				// The node-lifecycle controller's taints of a lost node:
				// the Pods stay for the cluster side to handle.
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			RestartPolicy: corev1.RestartPolicyNever,
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// awaitPodEnd waits for Pod name to be Succeeded or Failed.
func awaitPodEnd(t *testing.T, ctx context.Context, kc kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	return awaitPod(t, ctx, kc, name, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// awaitPod waits for Pod name to be as done says (what, in words).
func awaitPod(t *testing.T, ctx context.Context, kc kubernetes.Interface, name, what string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	testutil.EventuallyNil(t, 3*time.Minute, func() error {
		var err error
		if p, err = kc.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		if !done(p) {
			return fmt.Errorf("pod %s is %s (%s)", name, p.Status.Phase, p.Status.Message)
		}
		return nil
	}, "Pod %s %s", name, what)
	return p
}

// podsOn lists the Pods bound to node.
func podsOn(t *testing.T, ctx context.Context, kc kubernetes.Interface, node string) []string {
	t.Helper()
	list, err := kc.CoreV1().Pods(clusterNS).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// execPod runs argv in Pod name through the apiserver and the node's
// kubelet API, as kubectl exec does; a terminal when size is set.
func execPod(ctx context.Context, cp *kubetest.ControlPlane, name string, argv []string, stdin io.Reader, stdout io.Writer, size *sizeQueue) error {
	req := cp.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(clusterNS).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: size == nil, TTY: size != nil}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cp.Config, "POST", req.URL())
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: size != nil}
	if size != nil {
		opts.TerminalSizeQueue = size
	} else {
		opts.Stderr = io.Discard
	}
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return exec.StreamWithContext(ectx, opts)
}

// portForward forwards a local port to port of Pod name through the
// apiserver and the node's kubelet API, as kubectl port-forward does, for
// the rest of the test; it returns the local address.
func portForward(t *testing.T, cp *kubetest.ControlPlane, name string, port int) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := cp.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(clusterNS).Name(name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", url)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-errc })
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward: %v", err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("port-forward's ports: %v %v", ports, err)
	}
	return "127.0.0.1:" + strconv.Itoa(int(ports[0].Local))
}

// sizeQueue gives its sizes, then blocks until the exec ends.
type sizeQueue struct {
	mu    sync.Mutex
	sizes []remotecommand.TerminalSize
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	q.mu.Lock()
	if len(q.sizes) > 0 {
		s := q.sizes[0]
		q.sizes = q.sizes[1:]
		q.mu.Unlock()
		return &s
	}
	q.mu.Unlock()
	return nil
}

func ptrTo[T any](v T) *T { return &v }
