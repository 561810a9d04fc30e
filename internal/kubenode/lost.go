package kubenode

// Node failure: the stock node-lifecycle controller marks a node that
// stops renewing its Lease NotReady and taints it; without a kubelet its
// Pods would stay Terminating forever. Every hutch node runs this loop;
// the one holding the Lease hutch-cluster force-deletes the Pods of hutch
// nodes NotReady longer than cluster.lost_grace_secs and records
// sandbox.lost for each (in its event log and as a Pod event).

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/hutch-dev/hutch/internal/events"
)

// EventSandboxLost is recorded for each Pod of a dead node that is
// force-deleted.
const EventSandboxLost = "sandbox.lost"

// Lease of the cluster side's leader.
const (
	leaseName      = "hutch-cluster"
	leaseNamespace = "kube-node-lease"
)

// sweepEvery is how often the leader looks for dead nodes.
const sweepEvery = 2 * time.Second

// runLostHandling campaigns for the cluster side's Lease until ctx ends,
// sweeping while it leads.
func runLostHandling(ctx context.Context, client kubernetes.Interface, node string, o Options) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: leaseName, Namespace: leaseNamespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: node},
	}
	grace := time.Duration(o.Config.Cluster.LostGraceSecs) * time.Second
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			ReleaseOnCancel: true,
			LeaseDuration:   15 * time.Second,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     2 * time.Second,
			Name:            leaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					o.Logger.Info("leading the cluster side", "node", node)
					t := time.NewTicker(sweepEvery)
					defer t.Stop()
					for {
						sweep(ctx, client, grace, o)
						select {
						case <-ctx.Done():
							return
						case <-t.C:
						}
					}
				},
				OnStoppedLeading: func() {},
			},
		})
	}
}

// sweep force-deletes the Pods of every hutch node NotReady longer than
// grace.
func sweep(ctx context.Context, client kubernetes.Interface, grace time.Duration, o Options) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelNode + "=true"})
	if err != nil {
		return
	}
	for _, n := range nodes.Items {
		since, dead := notReadySince(n)
		if !dead || time.Since(since) < grace {
			continue
		}
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
		if err != nil {
			continue
		}
		for _, k := range pods.Items {
			forceDelete(ctx, client, n.Name, &k, o)
		}
	}
}

// notReadySince is when node n stopped being Ready; dead is false while
// it is Ready.
func notReadySince(n corev1.Node) (since time.Time, dead bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time, c.Status != corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// forceDelete removes Pod k of dead node nodeName at once, and records
// sandbox.lost.
func forceDelete(ctx context.Context, client kubernetes.Interface, nodeName string, k *corev1.Pod, o Options) {
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(string(k.UID))
	if err := client.CoreV1().Pods(k.Namespace).Delete(ctx, k.Name, opts); err != nil {
		return
	}
	sandbox := ""
	if cs := k.Status.ContainerStatuses; len(cs) == 1 {
		sandbox = trimScheme(cs[0].ContainerID)
	}
	o.Logger.Warn("force-deleted the Pod of a lost node", "pod", key(k.Namespace, k.Name), "node", nodeName, "sandbox", sandbox)
	data, _ := json.Marshal(map[string]string{"pod": key(k.Namespace, k.Name), "uid": string(k.UID), "node": nodeName})
	if o.Events != nil {
		o.Events.Append(events.Event{Time: time.Now(), Type: EventSandboxLost, SandboxID: sandbox, Data: data})
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: k.Name + ".", Namespace: k.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: k.Namespace, Name: k.Name, UID: k.UID, APIVersion: "v1"},
		Reason:         "SandboxLost",
		Message:        "node " + nodeName + " was NotReady past the grace; the Pod was force-deleted (" + EventSandboxLost + ")",
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "hutch-cluster"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	_, _ = client.CoreV1().Events(k.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

// trimScheme drops hutch:// of a container id.
func trimScheme(id string) string {
	const scheme = "hutch://"
	if len(id) > len(scheme) && id[:len(scheme)] == scheme {
		return id[len(scheme):]
	}
	return id
}
