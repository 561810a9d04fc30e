package gvisor

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// aheadRuntime is a Runtime with only its containers-ahead book, for
// tests of the book's logic (no runsc runs).
func aheadRuntime(per, sources int) *Runtime {
	r := &Runtime{live: map[string]*instance{}}
	r.ahead.init(Settings{RestoreAhead: per, RestoreAheadSources: sources}, nil)
	return r
}

// readyFor puts containers of the given ids, ready, in dir's source (a
// source without a shape, so that claims start no creates).
func readyFor(r *Runtime, dir string, ids ...string) {
	src := &aheadSource{claimed: map[string]*created{}}
	for _, id := range ids {
		src.ready = append(src.ready, &created{spec: runtime.Spec{ID: id}})
	}
	r.ahead.srcs[dir] = src
}

func TestClaimAhead(t *testing.T) {
	r := aheadRuntime(2, 4)
	if id := r.ClaimAhead("/snap/a"); id != "" {
		t.Fatalf("a source never restored has no container, got %q", id)
	}
	if r.ahead.srcs["/snap/a"] == nil {
		t.Fatal("a claim does not mark its checkpoint as a source")
	}
	readyFor(r, "/snap/a", "c1", "c2")
	for _, want := range []string{"c1", "c2", ""} {
		if id := r.ClaimAhead("/snap/a"); id != want {
			t.Fatalf("claim: %q, want %q", id, want)
		}
	}
	spec := runtime.Spec{ID: "c1"}
	if c := r.takeAhead(context.Background(), "/snap/a", spec); c == nil || c.spec.ID != "c1" {
		t.Fatalf("the restore of c1 does not find its container: %+v", c)
	}
	if c := r.takeAhead(context.Background(), "/snap/a", spec); c != nil {
		t.Error("a claimed container is taken twice")
	}
	if c := r.takeAhead(context.Background(), "/snap/b", runtime.Spec{ID: "c2"}); c != nil {
		t.Error("a container is taken for another checkpoint")
	}
	if c := r.takeAhead(context.Background(), "", runtime.Spec{ID: "c2"}); c != nil {
		t.Error("a boot takes a container created ahead")
	}
	if off := aheadRuntime(0, 4); off.ClaimAhead("/snap/a") != "" || len(off.ahead.srcs) != 0 {
		t.Error("restore_ahead 0 keeps sources")
	}
}

func TestAheadExpiredClaims(t *testing.T) {
	now := time.Now()
	src := &aheadSource{claimed: map[string]*created{
		"old": {spec: runtime.Spec{ID: "old"}, claimedAt: now.Add(-aheadClaimTTL - time.Second)},
		"new": {spec: runtime.Spec{ID: "new"}, claimedAt: now.Add(-time.Second)},
	}}
	gone := src.expired(now)
	if len(gone) != 1 || gone[0].spec.ID != "old" || len(src.claimed) != 1 || src.claimed["new"] == nil {
		t.Errorf("expired %v, left %v", gone, src.claimed)
	}
}

func TestAheadEviction(t *testing.T) {
	r := aheadRuntime(2, 2)
	a := &r.ahead
	now := time.Now()
	for i, dir := range []string{"/a", "/b", "/c"} {
		a.srcs[dir] = &aheadSource{claimed: map[string]*created{}, used: now.Add(time.Duration(i) * time.Second),
			ready: []*created{{spec: runtime.Spec{ID: "in" + dir}}}}
	}
	a.srcs["/a"].used = now.Add(time.Hour) // the most recently claimed
	gone := a.evictLocked("/c")
	if len(gone) != 1 || gone[0].spec.ID != "in/b" || a.srcs["/b"] != nil || a.srcs["/a"] == nil || a.srcs["/c"] == nil {
		t.Errorf("evicted %v; left %v", gone, a.srcs)
	}
}

func TestAheadShapes(t *testing.T) {
	const old, id = "0123456789ab-old", "fedcba987654-new"
	if got := renamed("hutch-01234567", old, id); got != "hutch-fedcba98" {
		t.Errorf("renamed: %q", got)
	}
	if got := renamed("box", old, id); got != "box" {
		t.Errorf("a host name without the id is kept: %q", got)
	}
	a := runtime.Spec{ID: old, Hostname: "hutch-01234567", CPUs: 1, MemoryMB: 512, UpperLayer: "/t"}
	b := a
	b.ID, b.Hostname = id, "hutch-fedcba98"
	if !sameShape(a, b) {
		t.Error("specs that differ only in id and host name are not one shape")
	}
	b.MemoryMB = 1024
	if sameShape(a, b) {
		t.Error("another memory limit is the same shape")
	}
	for _, s := range []runtime.Spec{{Network: &runtime.NetworkAttachment{}}, {Mounts: []runtime.Mount{{Source: "/v", Destination: "/v"}}}, {Reattach: true}} {
		if aheadable(&s) {
			t.Errorf("a container is made ahead for %+v", s)
		}
	}
	if aheadable(nil) || !aheadable(&a) {
		t.Error("aheadable")
	}
}
