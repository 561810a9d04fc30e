package integration

// issue 35: a cluster node with cluster.reattach_grace_secs stopped by
// SIGTERM (a systemctl restart, an upgrade) leaves its Pods' sandboxes
// running: restarted within the grace, it re-adopts them as after a
// SIGKILL; not restarted, its crash watchdog destroys them once the grace
// has passed. One node on a network of its own (apart from TestCluster's).

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/testutil/kubetest"
)

// sigtermNet is TestClusterReattachSIGTERM's network.
var sigtermNet = clusterNet{bridge: "hk-rbr", subnet: "10.235.36.", netnsPrefix: "hk-reatt-", vethPrefix: "hk-rv"}

// sigtermGrace is the node's cluster.reattach_grace_secs.
const sigtermGrace = 20 * time.Second

func TestClusterReattachSIGTERM(t *testing.T) {
	testutil.RequiresIntegration(t)
	binaries(t) // built before the clock of any wait starts
	nodes := sigtermNet.make(t, 1)
	cp := kubetest.StartAt(t, sigtermNet.host())
	kc := cp.Client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "gvisor"}
	if _, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := "hutch-sigterm-0"
	d := startClusterDaemon(t, cp, node, nodes[0], fmt.Sprintf("  reattach_grace_secs: %d\n", int(sigtermGrace.Seconds())))
	testutil.EventuallyNil(t, 2*time.Minute, func() error { return nodesReady(ctx, kc, []string{node}, true) }, "%s Ready", node)
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := kc.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "the default service account")

	// The counter lives in the sandbox: its main process's shell and the
	// sandbox's /tmp. A sandbox booted again would start it from 0.
	pod := clusterPod("counter", "i=0; while true; do i=$((i+1)); echo tick $i; echo $i > /tmp/count; sleep 1; done")
	pod.Spec.RuntimeClassName = ptrTo("gvisor")
	if _, err := kc.CoreV1().Pods(clusterNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyNil(t, 3*time.Minute, func() error {
		p, err := kc.CoreV1().Pods(clusterNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || !podReady(p) {
			return fmt.Errorf("pod %s is %s (%s)", pod.Name, p.Status.Phase, p.Status.Message)
		}
		return nil
	}, "Pod %s Running and Ready", pod.Name)
	// count reads the counter through kubectl exec's path once it passed after.
	count := func(after int, what string) int {
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
	before := count(0, "before the restart")

	t.Run("restart within the grace", func(t *testing.T) {
		d.terminate()
		if log := d.log.String(); !strings.Contains(log, "sandbox left running for a restarted daemon to adopt") {
			t.Errorf("the SIGTERM'd daemon did not leave the Pod's sandbox:\n%s", log)
		}
		d.start()
		testutil.EventuallyNil(t, time.Minute, func() error { return nodesReady(ctx, kc, []string{node}, true) }, "%s Ready after its restart", node)
		after := count(before, "after the restart")
		still := count(after, "still counting")
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
