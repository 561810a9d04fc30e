package kubenode

// issue 35: what a re-adopted Pod's sandbox gets again from the restarted
// node: its exposed ports (the preview path's exposures were the earlier
// daemon's) and its lifetime, counted from the Pod's start.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// takeUp exposes the ports of Pod k again on its adopted sandbox id and
// gives the sandbox what is left of the Pod's lifetime (its
// activeDeadlineSeconds, or a cluster API create's timeout_secs) from
// the Pod's start. It says whether the Pod goes on: a Pod whose lifetime
// passed while its node was down fails with DeadlineExceeded, one whose
// port cannot be exposed with SandboxLost, and its sandbox is stopped.
func (p *provider) takeUp(ctx context.Context, ko string, k *corev1.Pod, id string) bool {
	for _, cp := range k.Spec.Containers[0].Ports {
		if _, err := functions.Call[api.PortInfo](ctx, p.o.Table, api.FnPortExpose, api.PortExposeRequest{SandboxID: id, Port: int(cp.ContainerPort)}); err != nil {
			p.fail(ko, ReasonSandboxLost, fmt.Sprintf("the node restarted and could not expose port %d again: %v", cp.ContainerPort, err), nil)
			p.stopSandbox(ctx, id)
			return false
		}
	}
	secs := createRequest(k).TimeoutSecs
	if _, asked, ok, _ := p.apiPod(k); ok {
		secs = asked.TimeoutSecs
	}
	left, has := lifetimeLeft(k, secs, time.Now())
	if !has {
		return true
	}
	if left <= 0 {
		p.fail(ko, ReasonDeadline, "the Pod's lifetime passed while its node restarted", nil)
		p.stopSandbox(ctx, id)
		return false
	}
	if _, err := functions.Call[api.SetTimeoutResponse](ctx, p.o.Table, api.FnSetTimeout, api.SetTimeoutRequest{
		SandboxID: id, TimeoutSecs: uint64((left + time.Second - 1) / time.Second)}); err != nil {
		p.log.Warn("giving an adopted Pod's sandbox the rest of its lifetime", "sandbox", id, "err", err)
	}
	return true
}

// lifetimeLeft is what is left at now of Pod k's lifetime of secs from
// its start; has is false for none (secs 0, or a Pod not started).
func lifetimeLeft(k *corev1.Pod, secs uint64, now time.Time) (left time.Duration, has bool) {
	if secs == 0 || k.Status.StartTime == nil {
		return 0, false
	}
	return k.Status.StartTime.Add(time.Duration(secs) * time.Second).Sub(now), true
}
