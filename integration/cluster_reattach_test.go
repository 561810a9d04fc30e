package integration

// issue 35: a cluster node with cluster.reattach_grace_secs stopped by
// SIGTERM (a systemctl restart, an upgrade) leaves its Pods' sandboxes
// running: restarted within the grace, it re-adopts them as after a
// SIGKILL; not restarted, its crash watchdog destroys them once the grace
// has passed. One node on a network of its own (apart from TestCluster's).
// A networked Pod keeps its IP, its network (a server on the node's
// network by a name hutch's resolver answers), its exposed port and its
// lifetime counted from its start across a kill -9 and a SIGTERM; a
// frozen Pod's sandbox is kept at a SIGTERM and adopted running.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/testutil/kubetest"
)

// sigtermNet is TestClusterReattachSIGTERM's network.
var sigtermNet = clusterNet{bridge: "hk-rbr", subnet: "10.235.36.", netnsPrefix: "hk-reatt-", vethPrefix: "hk-rv"}

// sigtermGrace is the node's cluster.reattach_grace_secs.
const sigtermGrace = 20 * time.Second

// webDeadline is the networked Pod's activeDeadlineSeconds: longer than
// the test.
const webDeadline = time.Hour

func TestClusterReattachSIGTERM(t *testing.T) {
	testutil.RequiresIntegration(t)
	binaries(t) // built before the clock of any wait starts
	nodes := sigtermNet.make(t, 1)
	host := sigtermNet.host().String()
	webPort := testutil.ServeHTTP(t, net.JoinHostPort(host, "0"), "on the node's network")
	resolver := testResolverAt(t, host, map[string]string{"web.test": host})
	cp := kubetest.StartAt(t, sigtermNet.host())
	kc := cp.Client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "gvisor"}
	if _, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := "hutch-sigterm-0"
	d := startClusterDaemon(t, cp, node, nodes[0], fmt.Sprintf("  reattach_grace_secs: %d\nblock_private_networks: false\nsandbox_nameservers: [%q]\n",
		int(sigtermGrace.Seconds()), resolver))
	testutil.EventuallyNil(t, 2*time.Minute, func() error { return nodesReady(ctx, kc, []string{node}, true) }, "%s Ready", node)
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := kc.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "the default service account")

	// The counter lives in the sandbox: its main process's shell and the
	// sandbox's /tmp. A sandbox booted again would start it from 0.
	pod := clusterPod("counter", "i=0; while true; do i=$((i+1)); echo tick $i; echo $i > /tmp/count; sleep 1; done")
	pod.Spec.RuntimeClassName = ptrTo("gvisor")
	web := clusterPod("netweb", "")
	web.Spec.Containers[0].Command = []string{"python3", "-m", "http.server", "8080"}
	web.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	web.Annotations = map[string]string{kubenode.AnnotationNetwork: "true"}
	web.Spec.ActiveDeadlineSeconds = ptrTo(int64(webDeadline.Seconds()))
	for _, p := range []*corev1.Pod{pod, web} {
		if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := func(t *testing.T, name string) *corev1.Pod {
		t.Helper()
		return awaitPod(t, ctx, kc, name, "Running and Ready", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) })
	}
	running(t, pod.Name)
	// count reads the counter through kubectl exec's path once it passed after.
	count := func(t *testing.T, after int, what string) int {
		t.Helper()
		var n int
		testutil.EventuallyNil(t, time.Minute, func() error {
			var out bytes.Buffer
			if err := execPod(ctx, cp, pod.Name, []string{"cat", "/tmp/count"}, nil, &out, nil); err != nil {
				return err
			}
			var err error
			if n, err = strconv.Atoi(strings.TrimSpace(out.String())); err != nil {
				return fmt.Errorf("the counter reads %q", safeTail(out.Bytes()))
			}
			if n <= after {
				return fmt.Errorf("the counter is %d, not past %d", n, after)
			}
			return nil
		}, "the counter of Pod %s past %d %s", pod.Name, after, what)
		return n
	}
	before := count(t, 0, "before the restart")
	// network checks the networked Pod: its sandbox sends from its Pod
	// IP, resolves a name through hutch's resolver and reaches a server
	// on the node's network, and its web server answers kubectl
	// port-forward. It returns the Pod IP.
	network := func(t *testing.T, what string) string {
		t.Helper()
		p := running(t, web.Name)
		probe := fmt.Sprintf(`import socket, urllib.request
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("192.0.2.1", 9)); print(s.getsockname()[0])
print(urllib.request.urlopen("http://web.test:%d/", timeout=10).read().decode())`, webPort)
		testutil.EventuallyNil(t, time.Minute, func() error {
			var out bytes.Buffer
			if err := execPod(ctx, cp, web.Name, []string{"python3", "-c", probe}, nil, &out, nil); err != nil {
				return err
			}
			if want := p.Status.PodIP + "\non the node's network"; p.Status.PodIP == "" || !strings.HasPrefix(out.String(), want) {
				return fmt.Errorf("the probe printed %q, want %q", safeTail(out.Bytes()), want)
			}
			return nil
		}, "the networked Pod's network %s", what)
		local := portForward(t, cp, web.Name, 8080)
		testutil.EventuallyNil(t, time.Minute, func() error {
			resp, err := http.Get("http://" + local + "/")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16)); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Directory listing") {
				return fmt.Errorf("%s: %.200s", resp.Status, body)
			}
			return nil
		}, "the networked Pod's web server through port-forward %s", what)
		return p.Status.PodIP
	}
	ip := network(t, "before the restarts")
	// adopted checks the networked Pod after a restart: its IP kept, and
	// its sandbox's lifetime ending activeDeadlineSeconds after the
	// Pod's start, not after the adoption.
	adopted := func(t *testing.T, what string) {
		t.Helper()
		if got := network(t, what); got != ip {
			t.Errorf("the networked Pod's IP %s: %s, was %s", what, got, ip)
		}
		p := running(t, web.Name)
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, kubenode.ContainerIDPrefix)
		want := p.Status.StartTime.Add(webDeadline)
		testutil.EventuallyNil(t, time.Minute, func() error {
			info, err := d.c.Get(ctx, id)
			if err != nil {
				return err
			}
			if at, err := time.Parse(time.RFC3339, info.ExpiresAt); err != nil || at.Before(want.Add(-2*time.Second)) || at.After(want.Add(2*time.Second)) {
				return fmt.Errorf("the sandbox expires at %q (%v), want %s: the Pod's start and its deadline", info.ExpiresAt, err, want.Format(time.RFC3339))
			}
			return nil
		}, "the networked Pod's lifetime %s", what)
	}

	t.Run("kill -9 within the grace", func(t *testing.T) {
		d.kill9()
		d.start()
		testutil.EventuallyNil(t, time.Minute, func() error { return nodesReady(ctx, kc, []string{node}, true) }, "%s Ready after its restart", node)
		before = count(t, before, "after the kill -9")
		adopted(t, "after the kill -9")
	})

	t.Run("restart within the grace", func(t *testing.T) {
		// Its sandbox frozen at the SIGTERM: kept, and adopted running.
		p := running(t, pod.Name)
		if _, err := d.c.Pause(ctx, strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, kubenode.ContainerIDPrefix), ""); err != nil {
			t.Fatal(err)
		}
		d.terminate()
		if log := d.log.String(); !strings.Contains(log, "sandbox left running for a restarted daemon to adopt") {
			t.Errorf("the SIGTERM'd daemon did not leave the Pod's sandbox:\n%s", log)
		}
		d.start()
		testutil.EventuallyNil(t, time.Minute, func() error { return nodesReady(ctx, kc, []string{node}, true) }, "%s Ready after its restart", node)
		after := count(t, before, "after the restart (it was frozen)")
		adopted(t, "after the SIGTERM")
		still := count(t, after, "still counting")
		p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || !podReady(p) {
			t.Errorf("Pod %s after its node's restart: %s %s %q", pod.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		logs, err := kc.CoreV1().Pods(clusterNS).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if want := fmt.Sprintf("tick %d\n", still); err != nil || !strings.Contains(string(logs), want) {
			t.Errorf("logs of Pod %s after its node's restart: %v, no %q in %q", pod.Name, err, want, safeTail(logs))
		}
	})

	t.Run("grace passed", func(t *testing.T) {
		// Stopped again and not restarted: the sandbox outlives the
		// daemon for the grace, then its watchdog destroys it and
		// nothing of it is left on the host.
		d.terminate()
		if left := leftovers(d.dataDir, nil); len(left) == 0 {
			t.Error("nothing of the Pod's sandbox outlived the SIGTERM'd daemon")
		}
		var left []string
		if !testutil.Poll(sigtermGrace+time.Minute, func() bool { left = leftovers(d.dataDir, nil); return len(left) == 0 }) {
			t.Errorf("left once the grace had passed:\n  %s", strings.Join(left, "\n  "))
		}
		if left := netnsLeftovers(nodes[0].netns); len(left) > 0 {
			t.Errorf("left in the node's namespace:\n  %s", strings.Join(left, "\n  "))
		}
	})
}
