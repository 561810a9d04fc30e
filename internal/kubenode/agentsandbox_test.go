package kubenode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAgentSandboxOf: only a Pod controlled by an agents.x-k8s.io Sandbox
// is one, and its sandbox's metadata names that Sandbox.
func TestAgentSandboxOf(t *testing.T) {
	yes := true
	pod := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs}}
	}
	sandbox := metav1.OwnerReference{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "sb", UID: "u1", Controller: &yes}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		uid  string
	}{
		{"a Sandbox's", pod(sandbox), "u1"},
		{"no owner", pod(), ""},
		{"an owner that is not the controller", pod(metav1.OwnerReference{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "sb", UID: "u1"}), ""},
		{"another group's Sandbox", pod(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Sandbox", Name: "sb", UID: "u2", Controller: &yes}), ""},
		{"a ReplicaSet's", pod(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u3", Controller: &yes}), ""},
	} {
		uid, _ := agentSandboxOf(tc.pod)
		if string(uid) != tc.uid {
			t.Errorf("%s: uid %q, want %q", tc.name, uid, tc.uid)
		}
		meta := withAgentSandbox(tc.pod, map[string]string{MetaPod: "ns/p"})
		if tc.uid == "" && len(meta) != 1 {
			t.Errorf("%s: metadata %v", tc.name, meta)
		}
		if tc.uid != "" && (meta[MetaAgentSandbox] != tc.uid || meta[MetaAgentSandboxName] != "ns/sb" || meta[MetaPod] != "ns/p") {
			t.Errorf("%s: metadata %v", tc.name, meta)
		}
	}
}
