package bench

// `hutch bench --cluster` (issue 35): the cluster node's targets, measured
// on a cluster of several hutch daemons joined to a real control plane
// (the caller starts both), against one of those daemons used directly in
// the same run.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// Targets of the cluster bench (issue 35).
const (
	ClusterColdRatioTarget = 1.5
	ClusterPoolAddedTarget = 100 * time.Millisecond
	ClusterSpreadTarget    = 0.2
	ClusterLostSlack       = 10 * time.Second
	ClusterRSSTarget       = 1 << 30
)

// clusterNS is the namespace of the bench's Pods; clusterApp labels them.
const (
	clusterNS  = "default"
	clusterApp = "hutch-bench"
)

// clusterWait bounds each wait for Pods (a burst on a slow machine).
const clusterWait = 10 * time.Minute

// ClusterNode is one hutch daemon of the cluster: its Node's name and its
// own API.
type ClusterNode struct {
	Name   string
	Client *client.Client
}

// ClusterOptions configure a cluster bench run.
type ClusterOptions struct {
	// Options: Image, Runs, Warmup, RunscPath and Progress are used; the
	// single-daemon scenarios run with all of them on Nodes[0].
	Options
	Kube  kubernetes.Interface
	Nodes []ClusterNode
	// Pods are created at once in the spread scenario (100).
	Pods int
	// Kill kills node i's daemon as kill -9 does, returning when it is
	// dead.
	Kill func(i int) error
	// LostGrace is how long after its death a node's Pods may stay: the
	// controller-manager's node monitor grace plus the nodes'
	// cluster.lost_grace_secs. The target adds ClusterLostSlack.
	LostGrace time.Duration
	// ControlPlane are the control plane's processes, whose combined RSS
	// is sampled through the run.
	ControlPlane []int
}

// ClusterReport is the outcome of a cluster bench run.
type ClusterReport struct {
	Started time.Time `json:"started_at"`
	Host    Host      `json:"host"`
	Image   string    `json:"image"`
	Nodes   int       `json:"nodes"`
	// Single is one node's daemon used through its own API:
	// create-exec and pool-create-exec.
	Single Report `json:"single_daemon"`
	// PodCold and PodPool time Pod created → Ready (the sandbox's agent
	// answered), booting a sandbox and from a node's warm pool.
	PodCold Result `json:"pod_ready_cold"`
	PodPool Result `json:"pod_ready_pool"`
	Spread  Spread `json:"spread"`
	Lost    Lost   `json:"node_lost"`
	// ControlPlaneMiB is the largest combined RSS of the control plane
	// sampled each second through the run.
	ControlPlaneMiB float64 `json:"control_plane_rss_mib"`
	// Targets are the targets against what was measured.
	Targets []Target `json:"targets"`
}

// Spread is the burst of Pods created at once.
type Spread struct {
	Pods    int            `json:"pods"`
	Running int            `json:"running"`
	PerNode map[string]int `json:"per_node"`
	// Worst is the largest distance of a node's count from the even
	// share, as a fraction of it.
	Worst   float64 `json:"worst_deviation"`
	Seconds float64 `json:"all_running_s"`
	Err     string  `json:"error,omitempty"`
}

// Lost is a node killed with Pods on it.
type Lost struct {
	Node    string  `json:"node"`
	Pods    int     `json:"pods"`
	Seconds float64 `json:"force_deleted_after_s"`
	Limit   float64 `json:"limit_s"`
	Err     string  `json:"error,omitempty"`
}

// Target is one target of the issue: what it asks, what was measured, and
// whether that meets it.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// Failed reports whether a measurement failed or a target was missed.
func (r ClusterReport) Failed() bool {
	return r.Single.Failed() || slices.ContainsFunc(r.Targets, func(t Target) bool { return !t.Met })
}

// RunCluster measures the cluster's targets. The Pods it creates are
// deleted before it returns, but those of the killed node, which its
// daemon's restart cleans up.
func RunCluster(ctx context.Context, opts ClusterOptions) (ClusterReport, error) {
	if len(opts.Nodes) < 2 || opts.Pods < len(opts.Nodes) {
		return ClusterReport{}, fmt.Errorf("a cluster bench needs 2 nodes or more and a Pod for each, got %d nodes and %d Pods", len(opts.Nodes), opts.Pods)
	}
	rep := ClusterReport{Started: time.Now().UTC().Truncate(time.Second), Image: opts.Image, Nodes: len(opts.Nodes)}
	rss := sampleRSS(opts.ControlPlane)
	defer rss.stop()

	single, err := Run(ctx, opts.Nodes[0].Client, opts.Options, selectNames(NameCreateExec, NamePoolCreateExec))
	if err != nil {
		return rep, err
	}
	rep.Single, rep.Host = single, single.Host
	k := &kubeBench{ClusterOptions: opts}
	e := &env{c: opts.Nodes[0].Client, opts: opts.Options, stops: newStopper(opts.Nodes[0].Client, maxPendingStops)}
	defer e.close()
	e.readPool(ctx)
	cold, note, err := e.createRequest(ctx, true)
	if err != nil {
		return rep, err
	}
	k.progress("bench: Pod created → Ready → first exec (cold)…")
	res, err := k.podReady(ctx, cold.MemoryMB, false)
	rep.PodCold = outcome("pod-ready", "Pod created → Ready → first exec (cold)", res, err)
	rep.PodCold.Note = note
	k.progress("bench: Pod created → Ready → first exec (warm pool)…")
	res, err = k.podReady(ctx, 0, true)
	rep.PodPool = outcome("pod-ready-pool", "Pod created → Ready → first exec (warm pool)", res, err)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	k.progress("bench: %d Pods created at once…", opts.Pods)
	d, err := e.learnDefaults(ctx)
	if err != nil {
		return rep, err
	}
	rep.Spread = k.spread(ctx, d.CPUs, d.MemoryMB)
	k.progress("bench: a node killed with its Pods…")
	rep.Lost = k.lose(ctx)
	if err := k.deleteAll(context.WithoutCancel(ctx)); err != nil && rep.Lost.Err == "" {
		rep.Lost.Err = err.Error()
	}
	rep.ControlPlaneMiB = mib(rss.stop())
	rep.Host.LoadEnd = loadAvg1m()
	rep.Targets = rep.targets(opts.LostGrace)
	return rep, ctx.Err()
}

// ClusterReady waits until every node is Ready and the default namespace
// has its service account (Pods need it).
func ClusterReady(ctx context.Context, kc kubernetes.Interface, nodes []ClusterNode) error {
	var last error
	k := &kubeBench{ClusterOptions: ClusterOptions{Kube: kc, Nodes: nodes}}
	err := k.until(ctx, func() (bool, error) {
		last = nodesReady(ctx, kc, nodes)
		if last == nil {
			_, last = kc.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		}
		return last == nil, nil
	}, "the cluster ready")
	if err != nil && last != nil {
		err = fmt.Errorf("%w: %v", err, last)
	}
	return err
}

// nodesReady is nil when every node is Ready.
func nodesReady(ctx context.Context, kc kubernetes.Interface, nodes []ClusterNode) error {
	for _, n := range nodes {
		node, err := kc.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			return fmt.Errorf("node %s is not Ready", n.Name)
		}
	}
	return nil
}

// selectNames is the scenarios of names, which exist.
func selectNames(names ...string) []Scenario {
	sel, err := Select(names)
	if err != nil {
		panic(err)
	}
	return sel
}

// targets compares what was measured with the targets.
func (r ClusterReport) targets(lostGrace time.Duration) []Target {
	var ts []Target
	single, _ := r.Single.latency(NameCreateExec)
	pool, _ := r.Single.latency(NamePoolCreateExec)
	if t := (Target{Name: "Pod created → Ready → first exec ÷ one daemon's create → first exec, cold (p50)", Want: fmt.Sprintf("≤ %g×", ClusterColdRatioTarget)}); single != nil && r.PodCold.Latency != nil && single.P50 > 0 {
		x := float64(r.PodCold.Latency.P50) / float64(single.P50)
		t.Got, t.Met = fmt.Sprintf("%.2f× (%.0f ms ÷ %.0f ms)", x, ms(r.PodCold.Latency.P50), ms(single.P50)), x <= ClusterColdRatioTarget
		ts = append(ts, t)
	} else {
		ts = append(ts, Target{Name: t.Name, Want: t.Want, Got: "not measured: " + orNone(r.PodCold.Err, r.PodCold.Skipped)})
	}
	if t := (Target{Name: "warm pool: ms added by the cluster path (p50)", Want: fmt.Sprintf("≤ %d ms", ClusterPoolAddedTarget.Milliseconds())}); pool != nil && r.PodPool.Latency != nil {
		added := r.PodPool.Latency.P50 - pool.P50
		t.Got, t.Met = fmt.Sprintf("%.0f ms (%.0f ms − %.0f ms)", ms(added), ms(r.PodPool.Latency.P50), ms(pool.P50)), added <= ClusterPoolAddedTarget
		ts = append(ts, t)
	} else {
		ts = append(ts, Target{Name: t.Name, Want: t.Want, Got: "not measured: " + orNone(r.PodPool.Err, r.PodPool.Skipped)})
	}
	s := r.Spread
	t := Target{Name: fmt.Sprintf("%d Pods at once: all Running, spread", s.Pods), Want: fmt.Sprintf("all, within ±%.0f %% of even", ClusterSpreadTarget*100)}
	if s.Err != "" {
		t.Got = s.Err
	} else {
		t.Got = fmt.Sprintf("%d Running in %.1f s, %v, worst %.1f %% off", s.Running, s.Seconds, s.PerNode, s.Worst*100)
		t.Met = s.Running == s.Pods && s.Worst <= ClusterSpreadTarget
	}
	ts = append(ts, t)
	l := r.Lost
	t = Target{Name: "a dead node's Pods force-deleted", Want: fmt.Sprintf("within %.0f s (grace %s + %s)", l.Limit, lostGrace, ClusterLostSlack)}
	if l.Err != "" {
		t.Got = l.Err
	} else {
		t.Got, t.Met = fmt.Sprintf("%d Pods of %s in %.1f s", l.Pods, l.Node, l.Seconds), l.Seconds <= l.Limit
	}
	ts = append(ts, t)
	return append(ts, Target{Name: "control plane RSS (etcd, apiserver, controller-manager, scheduler), largest sample", Want: "< 1024 MiB",
		Got: fmt.Sprintf("%.0f MiB", r.ControlPlaneMiB), Met: r.ControlPlaneMiB > 0 && r.ControlPlaneMiB < mib(ClusterRSSTarget)})
}

// orNone is the first of its arguments that is not "", or "no samples".
func orNone(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return "no samples"
}

// WriteMarkdown renders the single daemon's report, then the cluster's
// Pod latencies and the targets.
func (r ClusterReport) WriteMarkdown(w io.Writer) error {
	if err := r.Single.WriteMarkdown(w); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("\n## hutch bench --cluster — %d nodes, one control plane\n\n", r.Nodes)
	p("%s", latencyHeader)
	for _, res := range []Result{r.PodCold, r.PodPool} {
		if s := res.Latency; s != nil {
			p("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | |\n", res.Title, len(s.Samples), ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Min), ms(s.Mean))
		} else {
			p("| %s | failed: %s | | | | | | |\n", res.Title, orNone(res.Err, res.Skipped))
		}
	}
	p("\n| target | want | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s | %s |\n", t.Name, t.Want, strings.ReplaceAll(t.Got, "|", "/"), met)
	}
	p("\nNotes: a Pod's first exec of true goes through its node's own API, as the single daemon's do; the Pods created at once ask for a sandbox of the default shape (requests = limits); ")
	p("cold Pods ask for what the single daemon's cold creates ask (%s).\n", orNone(r.PodCold.Note))
	return bw.Flush()
}

// kubeBench runs the cluster scenarios.
type kubeBench struct {
	ClusterOptions
	serial int
}

func (k *kubeBench) progress(format string, args ...any) {
	if k.Progress != nil {
		fmt.Fprintf(k.Progress, format+"\n", args...)
	}
}

// pod is a bench Pod: the image with no command (it runs until deleted),
// tolerating hutch's taint and the taints of a lost node (the cluster
// side, not the taint manager, handles those); cpus and memoryMB, when
// not 0, are its requests and limits.
func (k *kubeBench) pod(cpus, memoryMB uint32) *corev1.Pod {
	k.serial++
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", clusterApp, time.Now().Unix(), k.serial), Namespace: clusterNS,
			Labels: map[string]string{"app": clusterApp}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: k.Image}},
			Tolerations: []corev1.Toleration{{Key: "hutch.dev/sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			RestartPolicy: corev1.RestartPolicyNever,
		},
	}
	rl := corev1.ResourceList{}
	if cpus > 0 {
		rl[corev1.ResourceCPU] = resource.MustParse(strconv.Itoa(int(cpus)))
	}
	if memoryMB > 0 {
		rl[corev1.ResourceMemory] = resource.MustParse(strconv.Itoa(int(memoryMB)) + "Mi")
	}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	return p
}

// ready reports whether p is Ready, or the error of a Pod that ended.
func ready(p *corev1.Pod) (bool, error) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("pod %s ended %s: %s %s", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

// podReady times Pods created → Ready → first exec of true (through
// their node's own API, as the single daemon's scenarios exec), one at a
// time, each deleted (and its sandbox stopped) off the clock before the
// next. With pool, every node's warm pool is full before each run and one
// of them must have served it.
func (k *kubeBench) podReady(ctx context.Context, memoryMB uint32, pool bool) (Result, error) {
	e := &env{opts: k.Options}
	var samples []time.Duration
	for i := range k.Warmup + k.Runs {
		var hits uint64
		if pool {
			for _, n := range k.Nodes {
				_, h, err := e.poolFull(ctx, n.Client)
				if err != nil {
					return Result{}, fmt.Errorf("%s: %w", n.Name, err)
				}
				hits += h
			}
		}
		p := k.pod(0, memoryMB)
		d, err := k.createReady(ctx, p)
		if derr := k.deletePod(ctx, p.Name); err == nil {
			err = derr
		}
		if err != nil {
			return Result{}, err
		}
		if pool {
			var after uint64
			for _, n := range k.Nodes {
				_, _, h, err := e.poolStateOf(ctx, n.Client)
				if err != nil {
					return Result{}, err
				}
				after += h
			}
			if after != hits+1 {
				return Result{}, fmt.Errorf("pod %s did not come from a warm pool (pool hits %d, then %d)", p.Name, hits, after)
			}
		}
		if i >= k.Warmup {
			samples = append(samples, d)
		}
	}
	return latencyResult(samples), nil
}

// createReady creates p and returns how long it took to be Ready, as a
// watch opened before the create saw it, and its sandbox to answer a
// first exec of true through its node's API.
func (k *kubeBench) createReady(ctx context.Context, p *corev1.Pod) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	w, err := k.Kube.CoreV1().Pods(clusterNS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + p.Name})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := k.Kube.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return 0, fmt.Errorf("watching pod %s: %v", p.Name, apierrors.FromObject(ev.Object))
		}
		if got, ok := ev.Object.(*corev1.Pod); ok {
			if ok, err := ready(got); err != nil {
				return 0, err
			} else if ok {
				if err := k.firstExec(ctx, got); err != nil {
					return 0, err
				}
				return time.Since(start), nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s not Ready: %w", p.Name, cmpCtxErr(ctx))
}

// firstExec runs true in Ready Pod p's sandbox through its node's API.
func (k *kubeBench) firstExec(ctx context.Context, p *corev1.Pod) error {
	i := slices.IndexFunc(k.Nodes, func(n ClusterNode) bool { return n.Name == p.Spec.NodeName })
	cs := p.Status.ContainerStatuses
	if i < 0 || len(cs) != 1 || !strings.HasPrefix(cs[0].ContainerID, "hutch://") {
		return fmt.Errorf("pod %s: Ready on node %q without a hutch sandbox (%v)", p.Name, p.Spec.NodeName, cs)
	}
	id := strings.TrimPrefix(cs[0].ContainerID, "hutch://")
	res, err := k.Nodes[i].Client.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}, TimeoutMs: uint64(execTimeout.Milliseconds())})
	if err == nil {
		err = checkExit("true", res)
	}
	if err != nil {
		return fmt.Errorf("pod %s: exec true: %w", p.Name, err)
	}
	return nil
}

// cmpCtxErr is ctx's error, or that the watch ended.
func cmpCtxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("the watch ended")
}

// deletePod deletes Pod name and waits until it is gone from the API: its
// node stopped its sandbox first.
func (k *kubeBench) deletePod(ctx context.Context, name string) error {
	pods := k.Kube.CoreV1().Pods(clusterNS)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return k.until(ctx, func() (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}, "pod "+name+" deleted")
}

// until calls done every 100 ms until it is true or fails, for at most
// clusterWait.
func (k *kubeBench) until(ctx context.Context, done func() (bool, error), what string) error {
	deadline := time.Now().Add(clusterWait)
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, clusterWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// list is the bench's Pods, on node when it is not "".
func (k *kubeBench) list(ctx context.Context, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: "app=" + clusterApp}
	if node != "" {
		opts.FieldSelector = "spec.nodeName=" + node
	}
	l, err := k.Kube.CoreV1().Pods(clusterNS).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// spread creates k.Pods Pods at once, each asking for the resources of a
// sandbox of the default shape (cpus, memoryMB), and waits until all are
// Running and Ready, then counts them per node.
func (k *kubeBench) spread(ctx context.Context, cpus, memoryMB uint32) Spread {
	s := Spread{Pods: k.Pods, PerNode: map[string]int{}}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, k.Pods)
	for i := range k.Pods {
		p := k.pod(cpus, memoryMB)
		wg.Go(func() {
			_, errs[i] = k.Kube.CoreV1().Pods(clusterNS).Create(ctx, p, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.Err = err.Error()
		return s
	}
	err := k.until(ctx, func() (bool, error) {
		pods, err := k.list(ctx, "")
		if err != nil {
			return false, err
		}
		s.Running = 0
		for i := range pods {
			ok, err := ready(&pods[i])
			if err != nil {
				return false, err
			}
			if ok {
				s.Running++
			}
		}
		return s.Running == k.Pods, nil
	}, "every Pod Running")
	s.Seconds = time.Since(start).Seconds()
	if err != nil {
		s.Err = fmt.Sprintf("%d of %d Running: %v", s.Running, k.Pods, err)
		return s
	}
	pods, err := k.list(ctx, "")
	if err != nil {
		s.Err = err.Error()
		return s
	}
	for _, p := range pods {
		s.PerNode[p.Spec.NodeName]++
	}
	even := float64(k.Pods) / float64(len(k.Nodes))
	for _, n := range k.Nodes {
		s.Worst = max(s.Worst, abs(float64(s.PerNode[n.Name])-even)/even)
	}
	return s
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// lose kills the last node's daemon and times until none of its Pods is
// left in the API.
func (k *kubeBench) lose(ctx context.Context) Lost {
	victim := len(k.Nodes) - 1
	l := Lost{Node: k.Nodes[victim].Name, Limit: (k.LostGrace + ClusterLostSlack).Seconds()}
	pods, err := k.list(ctx, l.Node)
	if err == nil && len(pods) == 0 {
		err = errors.New("no Pod on the node")
	}
	if err != nil {
		l.Err = fmt.Sprintf("%s: %v", l.Node, err)
		return l
	}
	l.Pods = len(pods)
	start := time.Now()
	if err := k.Kill(victim); err != nil {
		l.Err = err.Error()
		return l
	}
	err = k.until(ctx, func() (bool, error) {
		left, err := k.list(ctx, l.Node)
		return len(left) == 0, err
	}, "the dead node's Pods force-deleted")
	l.Seconds = time.Since(start).Seconds()
	if err != nil {
		l.Err = err.Error()
	}
	return l
}

// deleteAll deletes the bench's Pods at once and waits until they are
// gone.
func (k *kubeBench) deleteAll(ctx context.Context) error {
	pods := k.Kube.CoreV1().Pods(clusterNS)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=" + clusterApp}); err != nil {
		return err
	}
	return k.until(ctx, func() (bool, error) {
		left, err := k.list(ctx, "")
		return len(left) == 0, err
	}, "the bench's Pods deleted")
}

// rssSampler sums the RSS of its processes each second and keeps the
// largest sum.
type rssSampler struct {
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	peak uint64
}

func sampleRSS(pids []int) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	sample := func() {
		var sum uint64
		for _, pid := range pids {
			sum += vmRSS(pid)
		}
		s.mu.Lock()
		s.peak = max(s.peak, sum)
		s.mu.Unlock()
	}
	sample()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the largest sum, in bytes.
func (s *rssSampler) stop() uint64 {
	s.once.Do(func() { close(s.done) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// vmRSS is process pid's resident set in bytes; 0 when it is gone.
func vmRSS(pid int) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, _ := strconv.ParseUint(f[1], 10, 64)
			return kib << 10
		}
	}
	return 0
}
