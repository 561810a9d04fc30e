package kubenode

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hutch-dev/hutch/internal/config"
)

func testPod(mut func(*corev1.Pod)) *corev1.Pod {
	k := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "python"}}}}
	k.Namespace, k.Name, k.UID = "ns", "p", "uid-1"
	if mut != nil {
		mut(k)
	}
	return k
}

func TestCheckPod(t *testing.T) {
	p := &provider{o: Options{Runtimes: []string{"gvisor"}}}
	yes := true
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Pod)
		want string // a word of the message, "" for a Pod hutch runs
	}{
		{"plain", nil, ""},
		{"two containers", func(k *corev1.Pod) { k.Spec.Containers = append(k.Spec.Containers, k.Spec.Containers[0]) }, "exactly one"},
		{"init", func(k *corev1.Pod) { k.Spec.InitContainers = k.Spec.Containers }, "init"},
		{"host network", func(k *corev1.Pod) { k.Spec.HostNetwork = true }, "host namespaces"},
		{"hostPath", func(k *corev1.Pod) {
			k.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, "hostPath"},
		{"privileged", func(k *corev1.Pod) {
			k.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}, "privileged"},
		{"token volume", func(k *corev1.Pod) {
			k.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
			k.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets"}}
		}, ""},
		{"volume mount", func(k *corev1.Pod) {
			k.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			k.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, "volume mounts"},
		{"probe", func(k *corev1.Pod) { k.Spec.Containers[0].LivenessProbe = &corev1.Probe{} }, "probes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := p.checkPod(testPod(tc.mut))
			if tc.want == "" {
				if reason != "" {
					t.Fatalf("refused: %s %s", reason, msg)
				}
				return
			}
			if reason != ReasonUnsupported || !strings.Contains(msg, tc.want) {
				t.Fatalf("got %q %q, want %s naming %q", reason, msg, ReasonUnsupported, tc.want)
			}
		})
	}
}

func TestCreateRequest(t *testing.T) {
	deadline := int64(90)
	req := createRequest(testPod(func(k *corev1.Pod) {
		c := &k.Spec.Containers[0]
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("100Mi")}
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{}}}
		k.Spec.ActiveDeadlineSeconds = &deadline
	}))
	if req.Image != "python" || req.CPUs != 2 || req.MemoryMB != 1024 || req.TimeoutSecs != 90 {
		t.Fatalf("request %+v", req)
	}
	if len(req.Env) != 1 || req.Env[0] != "A=1" {
		t.Fatalf("env %v", req.Env)
	}
	if req.Metadata[MetaPod] != "ns/p" || req.Metadata[MetaUID] != "uid-1" {
		t.Fatalf("metadata %v", req.Metadata)
	}
}

func TestTerminate(t *testing.T) {
	for _, tc := range []struct {
		code   int32
		reason string
		want   corev1.PodPhase
	}{{0, "", corev1.PodSucceeded}, {3, "", corev1.PodFailed}, {0, ReasonSandboxStopped, corev1.PodFailed}} {
		k := testPod(nil)
		terminate(k, tc.code, tc.reason, "")
		cs := k.Status.ContainerStatuses
		if k.Status.Phase != tc.want || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != tc.code {
			t.Errorf("terminate(%d, %q): %s %+v", tc.code, tc.reason, k.Status.Phase, cs)
		}
		// An ended Pod keeps its end.
		terminate(k, 9, "other", "")
		if k.Status.ContainerStatuses[0].State.Terminated.ExitCode != tc.code {
			t.Errorf("a second end replaced the first")
		}
	}
}

func TestCapacity(t *testing.T) {
	c := Capacity(config.Default())
	if c.Pods().Value() != int64(config.Default().MaxConcurrentSandboxes) || c.Cpu().IsZero() || c.Memory().IsZero() || c.StorageEphemeral().IsZero() {
		t.Fatalf("capacity %v", c)
	}
}

func TestParseTaint(t *testing.T) {
	k, v, e, err := config.ParseTaint(config.DefaultTaint)
	if err != nil || k != "hutch.dev/sandbox" || v != "true" || e != "NoSchedule" {
		t.Fatalf("%q %q %q %v", k, v, e, err)
	}
	for _, bad := range []string{"", "k=v", "k=v:Sometimes", ":NoSchedule"} {
		if _, _, _, err := config.ParseTaint(bad); err == nil {
			t.Errorf("taint %q accepted", bad)
		}
	}
}

func TestCreateRequestNetwork(t *testing.T) {
	if createRequest(testPod(nil)).Network {
		t.Error("a Pod without the annotation got a network")
	}
	k := testPod(func(k *corev1.Pod) { k.Annotations = map[string]string{AnnotationNetwork: "true"} })
	if !createRequest(k).Network {
		t.Errorf("a Pod with %s=true got no network", AnnotationNetwork)
	}
}
