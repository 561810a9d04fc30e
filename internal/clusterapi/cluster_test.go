package clusterapi

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// nowhere holds no sandbox.
type nowhere struct{}

func (nowhere) Get(context.Context, api.GetRequest) (api.SandboxInfo, error) {
	return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "no such sandbox")
}

// An unknown id costs one Pod list, not one per call.
func TestHolderCachesMisses(t *testing.T) {
	client := fake.NewClientset()
	a := New(Options{Config: config.Default(), Local: nowhere{}})
	a.Attach(client, "node-a")
	ctx := auth.WithOwner(context.Background(), "alice")
	for range 3 {
		if _, ok := a.holder(ctx, "unknown-id"); ok {
			t.Fatal("an unknown id has a holder")
		}
	}
	lists := 0
	for _, act := range client.Actions() {
		if act.GetVerb() == "list" && act.GetResource().Resource == "pods" {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("%d Pod lists for three calls on one unknown id, want 1", lists)
	}
	// Bounded: a full cache drops what it holds.
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range maxMisses + 10 {
		a.miss(string(rune('a'+i%26))+string(rune(i)), a.misses["hutch-alice/unknown-id"])
	}
	if len(a.misses) > maxMisses {
		t.Fatalf("%d misses kept, at most %d", len(a.misses), maxMisses)
	}
}

// The owner's namespace gets hutch's quota from the owner's limits, not
// when the admin set one, and none without limits.
func TestEnsureQuota(t *testing.T) {
	cfg := config.Default()
	cfg.Quota.Owners = map[string]config.QuotaLimits{"carol": {Sandboxes: 5, CPUs: 8, MemoryMB: 4096}}
	a := New(Options{Config: cfg})
	newClient := func(objs ...runtime.Object) *fake.Clientset {
		c := fake.NewClientset(objs...)
		// The quota controller: status.hard follows spec.hard.
		sync := func(act k8stesting.Action) (bool, runtime.Object, error) {
			q := act.(k8stesting.CreateAction).GetObject().(*corev1.ResourceQuota)
			q.Status.Hard = q.Spec.Hard
			return false, nil, nil
		}
		c.PrependReactor("create", "resourcequotas", sync)
		c.PrependReactor("update", "resourcequotas", sync)
		return c
	}
	ctx := context.Background()
	c := newClient()
	if err := a.ensureQuota(ctx, c, "hutch-carol", "carol"); err != nil {
		t.Fatal(err)
	}
	q, err := c.CoreV1().ResourceQuotas("hutch-carol").Get(ctx, QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5"), corev1.ResourceRequestsCPU: resource.MustParse("8"), corev1.ResourceRequestsMemory: resource.MustParse("4Gi")}
	if !sameHard(q.Spec.Hard, want) {
		t.Fatalf("carol's quota %v, want %v", q.Spec.Hard, want)
	}
	// A changed limit updates it.
	a.o.Config.Quota.Owners["carol"] = config.QuotaLimits{Sandboxes: 6}
	if err := a.ensureQuota(ctx, c, "hutch-carol", "carol"); err != nil {
		t.Fatal(err)
	}
	if q, _ = c.CoreV1().ResourceQuotas("hutch-carol").Get(ctx, QuotaName, metav1.GetOptions{}); q.Spec.Hard.Pods().Value() != 6 || len(q.Spec.Hard) != 1 {
		t.Fatalf("carol's updated quota %v", q.Spec.Hard)
	}
	// The admin's quota stays the only one.
	admin := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: "hutch-carol"}}
	c = newClient(admin)
	if err := a.ensureQuota(ctx, c, "hutch-carol", "carol"); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.CoreV1().ResourceQuotas("hutch-carol").List(ctx, metav1.ListOptions{}); len(l.Items) != 1 || l.Items[0].Name != "admin" {
		t.Fatalf("with the admin's quota: %v", l.Items)
	}
	// An owner without limits gets none.
	c = newClient()
	if err := a.ensureQuota(ctx, c, "hutch-dave", "dave"); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.CoreV1().ResourceQuotas("hutch-dave").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("an owner without limits: %v", l.Items)
	}
}

func TestCursor(t *testing.T) {
	c, plain, err := parseCursor("node-b=7,node-a=12")
	if err != nil || plain != "" || c.of("node-a", "") != "12" || c.of("node-c", "5") != "" {
		t.Fatalf("%v %q %v", c, plain, err)
	}
	if got := c.String(); got != "node-a=12,node-b=7" {
		t.Fatalf("cursor text %q", got)
	}
	if c, plain, err := parseCursor("now"); err != nil || c != nil || plain != "now" || c.of("x", plain) != "now" {
		t.Fatalf("a plain after: %v %q %v", c, plain, err)
	}
	for _, bad := range []string{"a=1,b", "A=1", "a=x", "a=1,=2"} {
		if _, _, err := parseCursor(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%q: %v, want S001", bad, err)
		}
	}
}
