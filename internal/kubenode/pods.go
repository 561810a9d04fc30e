package kubenode

// Pods → sandboxes: what a Pod may ask (checkPod), the sandbox made for
// it, its main process, and the Pod's status as the sandbox lives.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	vkerrdefs "github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Metadata keys of a Pod's sandbox.
const (
	MetaPod = "k8s.pod" // namespace/name
	MetaUID = "k8s.uid"
)

// AnnotationNetwork "true" gives a Pod's sandbox hutch's sandbox
// networking (outbound access, the daemon's egress rules); its address is
// the Pod IP. Without it the sandbox is offline, hutch's default, and the
// Pod has no IP.
const AnnotationNetwork = "hutch.dev/network"

// Reasons of a Pod's status hutch sets.
const (
	ReasonUnsupported    = "Unsupported"
	ReasonRuntimeClass   = "UnknownRuntimeClass"
	ReasonCreateFailed   = "SandboxCreateFailed"
	ReasonSandboxStopped = "SandboxStopped"
	ReasonSandboxLost    = "SandboxLost"
	ReasonDeadline       = "DeadlineExceeded"
)

// mainTag tags a Pod's main process among the sandbox's processes.
const mainTag = "k8s-main"

// pod is one Pod the node runs.
type pod struct {
	pod     *corev1.Pod // its spec and the status hutch reports
	sandbox string      // "" until created
	pid     int         // the main process, 0 for none
	owner   string      // issue 36: the sandbox's owner ("" but for the cluster API's)
	cancel  context.CancelFunc
}

// provider is virtual-kubelet's Provider over the function table.
type provider struct {
	o      Options
	node   string
	hostIP string
	client kubernetes.Interface
	dyn    dynamic.Interface // issue 36: agent-sandbox's Sandboxes
	log    *slog.Logger

	mu     sync.Mutex
	pods   map[string]*pod // by namespace/name
	bySb   map[string]string
	notify func(*corev1.Pod)
}

func newProvider(o Options, node, hostIP string, client kubernetes.Interface, _ nodeutil.ProviderConfig) *provider {
	return &provider{o: o, node: node, hostIP: hostIP, client: client, log: o.Logger.With("node", node),
		pods: map[string]*pod{}, bySb: map[string]string{}, notify: func(*corev1.Pod) {}}
}

func key(ns, name string) string { return ns + "/" + name }

// NotifyPods is virtual-kubelet's PodNotifier: status changes are pushed.
func (p *provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = f
	p.mu.Unlock()
}

// checkPod says what of spec hutch cannot do, "" when it can run it: one
// container, no init or ephemeral containers, no privilege, no host
// namespaces, no hostPath, no probes, no volume mounts.
func (p *provider) checkPod(k *corev1.Pod) (reason, msg string) {
	s := k.Spec
	switch {
	case len(s.Containers) != 1:
		return ReasonUnsupported, fmt.Sprintf("a hutch Pod has exactly one container (it has %d)", len(s.Containers))
	case len(s.InitContainers) > 0:
		return ReasonUnsupported, "init containers are not supported on a hutch node"
	case len(s.EphemeralContainers) > 0:
		return ReasonUnsupported, "ephemeral containers are not supported on a hutch node"
	case s.HostNetwork || s.HostPID || s.HostIPC:
		return ReasonUnsupported, "host namespaces (hostNetwork, hostPID, hostIPC) are not supported on a hutch node"
	}
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			return ReasonUnsupported, fmt.Sprintf("volume %q: hostPath is not supported on a hutch node", v.Name)
		}
	}
	c := s.Containers[0]
	switch {
	case c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged:
		return ReasonUnsupported, "privileged containers are not supported on a hutch node"
	case c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil:
		return ReasonUnsupported, "probes are not run on a hutch node (Ready is the sandbox's agent answering)"
	case slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return !isTokenVolume(s.Volumes, m.Name) }):
		return ReasonUnsupported, "volume mounts are not supported on a hutch node"
	case c.Image == "":
		return ReasonUnsupported, "the container has no image"
	}
	return "", ""
}

// runtimeOf is the hutch runtime of k's runtime class: the
// RuntimeClass's handler, which must be a runtime the node offers; ""
// for none (the daemon's default).
func (p *provider) runtimeOf(ctx context.Context, k *corev1.Pod) (string, string) {
	rc := k.Spec.RuntimeClassName
	if rc == nil || *rc == "" {
		return "", ""
	}
	cls, err := p.client.NodeV1().RuntimeClasses().Get(ctx, *rc, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Sprintf("runtime class %q: %v", *rc, err)
	}
	if !p.offers(cls.Handler) {
		return "", fmt.Sprintf("runtime class %q has handler %q; this node offers %s", *rc, cls.Handler, strings.Join(p.o.Runtimes, ", "))
	}
	return cls.Handler, ""
}

// isTokenVolume says volume name is the service account token the
// apiserver adds to every Pod (kube-api-access-*): a hutch node does not
// mount it, and does not refuse the Pod for it.
func isTokenVolume(vols []corev1.Volume, name string) bool {
	for _, v := range vols {
		if v.Name == name {
			return v.Projected != nil && strings.HasPrefix(name, "kube-api-access-")
		}
	}
	return false
}

func (p *provider) offers(rt string) bool {
	for _, r := range p.o.Runtimes {
		if r == rt {
			return true
		}
	}
	return false
}

// createRequest is the sandbox a Pod asks for (its runtime aside).
func createRequest(k *corev1.Pod) api.CreateRequest {
	c := k.Spec.Containers[0]
	req := api.CreateRequest{
		Image:    c.Image,
		Metadata: map[string]string{MetaPod: key(k.Namespace, k.Name), MetaUID: string(k.UID)},
		Network:  k.Annotations[AnnotationNetwork] == "true",
	}
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if q, ok := rl[corev1.ResourceCPU]; ok {
			req.CPUs = uint32(max((q.MilliValue()+999)/1000, 1))
		}
		if q, ok := rl[corev1.ResourceMemory]; ok {
			req.MemoryMB = uint32(max((q.Value()+(1<<20)-1)>>20, 1))
		}
	}
	if d := k.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		req.TimeoutSecs = uint64(*d)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			req.Env = append(req.Env, e.Name+"="+e.Value)
		}
	}
	return req
}

// CreatePod runs a Pod: checks it, then creates its sandbox and starts
// its main process in the background, the status following.
func (p *provider) CreatePod(ctx context.Context, k *corev1.Pod) error {
	k = k.DeepCopy()
	ko := key(k.Namespace, k.Name)
	runCtx, cancel := context.WithCancel(onNode(context.WithoutCancel(ctx)))
	pd := &pod{pod: k, cancel: cancel}
	// issue 36: a cluster API Pod's sandbox is its owner's.
	owner, _, _, _ := p.apiPod(k)
	pd.owner, runCtx = owner, auth.WithOwner(runCtx, owner)
	p.mu.Lock()
	if _, ok := p.pods[ko]; ok {
		p.mu.Unlock()
		cancel()
		return nil
	}
	p.pods[ko] = pd
	p.mu.Unlock()
	if started := k.Status.StartTime; started != nil {
		// An earlier daemon of this node ran it: adopt its sandbox if it
		// survived, else the Pod failed with the node.
		go p.adopt(runCtx, ko, k)
		return nil
	}
	now := metav1.Now()
	k.Status = corev1.PodStatus{Phase: corev1.PodPending, HostIP: p.hostIP, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	k.Status.ContainerStatuses = []corev1.ContainerStatus{waiting(k, "ContainerCreating", "")}
	if reason, msg := p.checkPod(k); reason != "" {
		p.fail(ko, reason, msg, nil)
		cancel()
		return nil
	}
	go p.run(runCtx, ko, k)
	return nil
}

// run creates the Pod's sandbox, starts its main process and waits for
// its end.
func (p *provider) run(ctx context.Context, ko string, k *corev1.Pod) {
	rt, bad := p.runtimeOf(ctx, k)
	if bad != "" {
		p.fail(ko, ReasonRuntimeClass, bad, nil)
		return
	}
	req := createRequest(k)
	if _, asked, ok, bad := p.apiPod(k); bad != "" { // issue 36
		p.fail(ko, ReasonUnsupported, bad, nil)
		return
	} else if ok {
		asked.Metadata = mergeMeta(asked.Metadata, req.Metadata)
		req = asked
	}
	if rt != "" {
		req.Runtime = rt
	}
	req.Metadata = withAgentSandbox(k, req.Metadata) // issue 36
	// issue 36: the agent-sandbox template's egress rules.
	if req.Network {
		pol, bad := p.templateEgress(ctx, k)
		if bad != "" {
			p.fail(ko, ReasonUnsupported, bad, nil)
			return
		}
		if pol != nil {
			req.Egress = pol
		}
	}
	created, woken := p.wakeSuspended(ctx, k) // issue 36: a resumed agent-sandbox Sandbox
	if !woken {
		var err error
		if created, err = functions.Call[api.CreateResponse](ctx, p.o.Table, api.FnCreate, req); err != nil {
			p.fail(ko, ReasonCreateFailed, err.Error(), nil)
			return
		}
	}
	p.mu.Lock()
	pd, ok := p.pods[ko]
	if ok {
		pd.sandbox = created.SandboxID
		p.bySb[created.SandboxID] = ko
	}
	p.mu.Unlock()
	if !ok || ctx.Err() != nil { // deleted while it booted
		p.stopSandbox(ctx, created.SandboxID)
		return
	}
	c := k.Spec.Containers[0]
	for _, cp := range c.Ports {
		if woken {
			break // exposed before its hibernation
		}
		if _, err := functions.Call[api.PortInfo](ctx, p.o.Table, api.FnPortExpose, api.PortExposeRequest{SandboxID: created.SandboxID, Port: int(cp.ContainerPort)}); err != nil {
			p.stopSandbox(ctx, created.SandboxID)
			p.fail(ko, ReasonCreateFailed, fmt.Sprintf("exposing port %d: %v", cp.ContainerPort, err), nil)
			return
		}
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	pid := 0
	if woken {
		pid = p.mainPid(ctx, created.SandboxID, k)
	} else if len(argv) > 0 {
		started, err := functions.Call[api.ProcessStartResponse](ctx, p.o.Table, api.FnProcessStart, api.ProcessStartRequest{
			SandboxID: created.SandboxID, Argv: argv, Workdir: c.WorkingDir, Tag: mainTag, Stdin: c.Stdin})
		if err != nil {
			p.stopSandbox(ctx, created.SandboxID)
			p.fail(ko, ReasonCreateFailed, "starting the main process: "+err.Error(), nil)
			return
		}
		pid = started.Pid
	}
	p.update(ko, func(pd *pod) {
		pd.pid = pid
		now := metav1.Now()
		s := &pd.pod.Status
		s.Phase = corev1.PodRunning
		p.setPodIP(s, created.SandboxID)
		s.Conditions = append(s.Conditions,
			corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image, ImageID: created.Image, Ready: true, Started: ptr(true),
			ContainerID: ContainerIDPrefix + created.SandboxID,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}}
	})
	p.follow(ctx, ko, created.SandboxID, pid)
}

// follow waits for the exit of main process pid of the Pod's sandbox id
// (none for 0) and ends the Pod with its code.
func (p *provider) follow(ctx context.Context, ko, id string, pid int) {
	if pid == 0 {
		return // runs until the Pod is deleted or the sandbox stops
	}
	// The output is followed (and dropped) to the process's exit: a
	// follow has no deadline, unlike sandbox::process::wait, whose
	// timeout racing the agent's was taken for an agent failure.
	info, err := p.copyOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: pid, Follow: true}, nil, nil)
	if err != nil || info.ExitCode == nil {
		return // deleted, or the sandbox stopped: sandboxStopped reports it
	}
	p.exited(ko, *info.ExitCode, "")
	p.stopSandbox(ctx, id)
}

// adopt takes over the running sandbox of a Pod an earlier daemon of this
// node started, found by the Pod's uid in the sandboxes' metadata; a Pod
// whose sandbox did not survive fails with SandboxLost.
func (p *provider) adopt(ctx context.Context, ko string, k *corev1.Pod) {
	list, err := functions.Call[api.ListResponse](ctx, p.o.Table, api.FnList, api.ListRequest{
		State: []string{"running"}, Metadata: map[string]string{MetaUID: string(k.UID)}})
	if err != nil || len(list.Sandboxes) == 0 {
		p.fail(ko, ReasonSandboxLost, "the node restarted and the Pod's sandbox did not survive", nil)
		return
	}
	id := list.Sandboxes[0].SandboxID
	pid := p.mainPid(ctx, id, k)
	p.mu.Lock()
	if pd, ok := p.pods[ko]; ok {
		pd.sandbox, pd.pid = id, pid
		p.bySb[id] = ko
	}
	p.mu.Unlock()
	p.log.Info("re-adopted a Pod's sandbox", "pod", ko, "sandbox", id, "main_pid", pid)
	p.update(ko, func(pd *pod) { p.setPodIP(&pd.pod.Status, id) })
	if p.takeUp(ctx, ko, k, id) {
		p.follow(ctx, ko, id, pid)
	}
}

// mainPid finds the main process of Pod k in its adopted sandbox id (issue
// 35): the process hutch started there with the Pod's command line (a
// restarted daemon has lost its tag); 0 for none.
func (p *provider) mainPid(ctx context.Context, id string, k *corev1.Pod) int {
	c := k.Spec.Containers[0]
	argv := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
	if argv == "" {
		return 0
	}
	ps, err := functions.Call[api.ProcessListResponse](ctx, p.o.Table, api.FnProcessList, api.ProcessListRequest{SandboxID: id})
	if err != nil {
		p.log.Warn("listing an adopted sandbox's processes", "sandbox", id, "err", err)
		return 0
	}
	for _, e := range ps.Processes {
		if e.Hutch && e.Command == argv {
			return e.Pid
		}
	}
	return 0
}

// setPodIP sets s's Pod IP to sandbox id's network address, where it has
// one.
func (p *provider) setPodIP(s *corev1.PodStatus, id string) {
	if p.o.Addr == nil {
		return
	}
	if a := p.o.Addr(id); a.IsValid() {
		s.PodIP = a.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
}

// exited ends the Pod with its main process's code: Succeeded for 0.
func (p *provider) exited(ko string, code int, reason string) {
	p.update(ko, func(pd *pod) {
		terminate(pd.pod, int32(code), reason, "")
	})
}

// fail ends the Pod as Failed with reason (never empty) and msg; a Pod
// that ended already keeps its end.
func (p *provider) fail(ko, reason, msg string, code *int32) {
	p.update(ko, func(pd *pod) {
		c := int32(-1)
		if code != nil {
			c = *code
		}
		terminate(pd.pod, c, reason, msg)
	})
}

// terminate moves k to its end: Succeeded for code 0 without a reason,
// Failed otherwise; its container terminated with code.
func terminate(k *corev1.Pod, code int32, reason, msg string) {
	s := &k.Status
	if s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed {
		return
	}
	now := metav1.Now()
	s.Phase = corev1.PodFailed
	if code == 0 && reason == "" {
		s.Phase = corev1.PodSucceeded
	}
	s.Reason, s.Message = reason, msg
	for i, c := range s.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			s.Conditions[i].Status, s.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
		}
	}
	cs := waiting(k, "", "")
	if len(s.ContainerStatuses) == 1 {
		cs = s.ContainerStatuses[0]
	}
	var started metav1.Time
	if cs.State.Running != nil {
		started = cs.State.Running.StartedAt
	}
	cs.Ready, cs.Started = false, ptr(false)
	termReason := reason
	if termReason == "" {
		termReason = "Completed"
		if code != 0 {
			termReason = "Error"
		}
	}
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: termReason, Message: msg, StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID}}
	s.ContainerStatuses = []corev1.ContainerStatus{cs}
}

// waiting is k's container waiting for reason.
func waiting(k *corev1.Pod, reason, msg string) corev1.ContainerStatus {
	c := k.Spec.Containers
	cs := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	if len(c) > 0 {
		cs.Name, cs.Image = c[0].Name, c[0].Image
	}
	return cs
}

func ptr[T any](v T) *T { return &v }

// update changes the Pod ko under the lock and pushes its status.
func (p *provider) update(ko string, f func(*pod)) {
	p.mu.Lock()
	pd, ok := p.pods[ko]
	if !ok {
		p.mu.Unlock()
		return
	}
	f(pd)
	out, notify := pd.pod.DeepCopy(), p.notify
	p.mu.Unlock()
	notify(out)
}

// sandboxStopped is told of every sandbox that stops: a Pod's sandbox
// that stops under it (idle, lifetime, a stop through the API) ends the
// Pod with the stop's cause.
func (p *provider) sandboxStopped(id string) {
	p.mu.Lock()
	ko, ok := p.bySb[id]
	var owner string
	var fromAPI bool
	if pd := p.pods[ko]; ok && pd != nil {
		owner, fromAPI = pd.owner, pd.pod.Labels[LabelAPI] == "true"
	}
	p.mu.Unlock()
	if !ok {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(onNode(auth.WithOwner(context.Background(), owner)), 10*time.Second)
		defer cancel()
		reason, msg := ReasonSandboxStopped, "the sandbox stopped"
		if info, err := functions.Call[api.SandboxInfo](ctx, p.o.Table, api.FnGet, api.GetRequest{SandboxID: id}); err == nil {
			if info.StopCause == "lifetime" {
				reason = ReasonDeadline
			}
			if info.StopReason != "" {
				msg = "the sandbox stopped: " + info.StopReason
			}
		}
		p.fail(ko, reason, msg, nil)
		if fromAPI { // issue 36: a cluster API sandbox ends with its Pod
			p.deleteAPIPod(ctx, ko)
		}
	}()
}

// stopSandbox stops a Pod's sandbox, as the owner ctx acts for.
func (p *provider) stopSandbox(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(onNode(context.WithoutCancel(ctx)), 30*time.Second)
	defer cancel()
	if _, err := functions.Call[api.StopResponse](ctx, p.o.Table, api.FnStop, api.StopRequest{SandboxID: id}); err != nil && !isGone(err) {
		p.log.Warn("stopping a Pod's sandbox", "sandbox", id, "err", err)
	}
}

// UpdatePod takes nothing of a changed Pod: its spec is immutable where
// hutch reads it.
func (p *provider) UpdatePod(context.Context, *corev1.Pod) error { return nil }

// DeletePod stops the Pod's sandbox and reports its container
// terminated, after which the Pod controller removes it from the API.
func (p *provider) DeletePod(ctx context.Context, k *corev1.Pod) error {
	ko := key(k.Namespace, k.Name)
	p.mu.Lock()
	pd, ok := p.pods[ko]
	p.mu.Unlock()
	if !ok {
		return vkerrdefs.NotFoundf("pod %s is not on this node", ko)
	}
	pd.cancel()
	// issue 36: a suspended agent-sandbox Sandbox's is hibernated instead.
	if pd.sandbox != "" && !p.hibernateSuspended(onNode(auth.WithOwner(ctx, pd.owner)), pd) {
		p.stopSandbox(auth.WithOwner(ctx, pd.owner), pd.sandbox)
	}
	p.update(ko, func(pd *pod) { terminate(pd.pod, 0, "", "") })
	p.mu.Lock()
	delete(p.pods, ko)
	delete(p.bySb, pd.sandbox)
	p.mu.Unlock()
	go p.removeFromAPI(k.Namespace, k.Name, k.UID)
	return nil
}

// removeFromAPI deletes a Pod whose sandbox is gone from the API at once,
// as a kubelet does once its containers stopped: virtual-kubelet would
// leave it Terminating for its whole grace period (30 s by default). The
// UID precondition spares a Pod made again under the same name.
func (p *provider) removeFromAPI(ns, name string, uid types.UID) {
	if p.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !k8serrors.IsNotFound(err) && !k8serrors.IsConflict(err) {
		p.log.Warn("deleting a stopped Pod from the API; it goes after its grace period", "pod", key(ns, name), "err", err)
	}
}

// GetPod is the Pod as hutch runs it.
func (p *provider) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, ok := p.pods[key(ns, name)]
	if !ok {
		return nil, vkerrdefs.NotFoundf("pod %s/%s is not on this node", ns, name)
	}
	return pd.pod.DeepCopy(), nil
}

// GetPodStatus is the Pod's status as hutch reports it.
func (p *provider) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	k, err := p.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &k.Status, nil
}

// GetPods lists the Pods the node runs.
func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, pd := range p.pods {
		out = append(out, pd.pod.DeepCopy())
	}
	return out, nil
}

// sandboxOf is the running sandbox of Pod ns/name, for the kubelet API.
func (p *provider) sandboxOf(ns, name string) (id string, pid int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, ok := p.pods[key(ns, name)]
	if !ok || pd.sandbox == "" {
		return "", 0, vkerrdefs.NotFoundf("pod %s/%s has no sandbox on this node", ns, name)
	}
	return pd.sandbox, pd.pid, nil
}

// isGone says err is a sandbox that no longer exists.
func isGone(err error) bool {
	return errdefs.Is(err, errdefs.CodeNotFound) || errdefs.Is(err, errdefs.CodeStopped)
}
