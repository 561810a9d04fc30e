package kubenode

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLifetimeLeft (issue 35): an adopted Pod's lifetime counts from the
// Pod's start, not from the adoption.
func TestLifetimeLeft(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	started := func(ago time.Duration) func(*corev1.Pod) {
		return func(k *corev1.Pod) { k.Status.StartTime = &metav1.Time{Time: now.Add(-ago)} }
	}
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Pod)
		secs uint64
		left time.Duration
		has  bool
	}{
		{"running", started(100 * time.Second), 3600, 3500 * time.Second, true},
		{"passed while down", started(time.Hour + time.Minute), 3600, -time.Minute, true},
		{"no lifetime", started(time.Minute), 0, 0, false},
		{"not started", nil, 3600, 0, false},
	} {
		left, has := lifetimeLeft(testPod(tc.mut), tc.secs, now)
		if left != tc.left || has != tc.has {
			t.Errorf("%s: %v %v, want %v %v", tc.name, left, has, tc.left, tc.has)
		}
	}
}
