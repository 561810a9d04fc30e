package clusterapi

// Item 4 of issue 36: an owner's namespace carries a ResourceQuota from
// hutch's limits of that owner (quota.default, quota.owners.<owner>:
// sandboxes, cpus, memory_mb), so that the apiserver refuses a create over
// them on every node at once; a quota the cluster's admin put in the
// namespace is left as it is and is the owner's instead.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/kubenode"
)

// QuotaName is the ResourceQuota hutch keeps in an owner's namespace.
const QuotaName = "hutch-owner"

// quotaSyncTimeout bounds the wait for the quota controller to take a
// new quota in (the apiserver refuses every Pod of a quota it has not).
const quotaSyncTimeout = 30 * time.Second

// quotaHard is what limits l bound in a namespace: Pods, cpu and memory
// requests; nothing for no limit.
func quotaHard(l config.QuotaLimits) corev1.ResourceList {
	hard := corev1.ResourceList{}
	if l.Sandboxes > 0 {
		hard[corev1.ResourcePods] = *resource.NewQuantity(int64(l.Sandboxes), resource.DecimalSI)
	}
	if l.CPUs > 0 {
		hard[corev1.ResourceRequestsCPU] = *resource.NewQuantity(int64(l.CPUs), resource.DecimalSI)
	}
	if l.MemoryMB > 0 {
		hard[corev1.ResourceRequestsMemory] = *resource.NewQuantity(int64(l.MemoryMB)<<20, resource.BinarySI)
	}
	return hard
}

// ensureQuota puts owner's limits in namespace ns as hutch's
// ResourceQuota (made, or brought up to date), unless another quota is
// there (the admin's) or the owner has no limits; it returns once the
// quota controller took it in.
func (a *API) ensureQuota(ctx context.Context, client kubernetes.Interface, ns, owner string) error {
	hard := quotaHard(a.o.Config.QuotaOf(owner))
	quotas := client.CoreV1().ResourceQuotas(ns)
	list, err := quotas.List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError("listing the quotas of "+ns, err)
	}
	var ours *corev1.ResourceQuota
	for i, q := range list.Items {
		if q.Name != QuotaName {
			return nil // the cluster admin's
		}
		ours = &list.Items[i]
	}
	switch {
	case len(hard) == 0 && ours == nil:
		return nil
	case len(hard) == 0:
		if err := quotas.Delete(ctx, QuotaName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return apiError("removing hutch's quota of "+ns, err)
		}
		return nil
	case ours == nil:
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns, Labels: map[string]string{kubenode.LabelAPI: "true"}},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return apiError("setting the quota of "+ns, err)
		}
	case !sameHard(ours.Spec.Hard, hard):
		ours.Spec.Hard = hard
		if _, err := quotas.Update(ctx, ours, metav1.UpdateOptions{}); err != nil {
			return apiError("updating the quota of "+ns, err)
		}
	}
	return awaitQuota(ctx, client, ns, hard)
}

// awaitQuota waits until the quota controller has taken hutch's quota of
// ns in with hard (its status says so).
func awaitQuota(ctx context.Context, client kubernetes.Interface, ns string, hard corev1.ResourceList) error {
	ctx, cancel := context.WithTimeout(ctx, quotaSyncTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, QuotaName, metav1.GetOptions{})
		if err == nil && sameHard(q.Status.Hard, hard) {
			return nil
		}
		select {
		case <-ctx.Done():
			return apiError("waiting for the quota of "+ns, fmt.Errorf("the quota controller did not take it in within %s (%v)", quotaSyncTimeout, err))
		case <-tick.C:
		}
	}
}

// sameHard says a and b bound the same resources to the same amounts.
func sameHard(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if o, ok := b[name]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}
