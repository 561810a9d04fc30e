package sandbox

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
)

// The reaper's decisions are package idle's (tested there on a fake);
// TestReap drives one pass with a chosen time through the manager's
// adapter, over sandboxes that have no runtime instance, which teardown
// treats as already gone.

// recordingObserver is an Observer that remembers what it was told.
type recordingObserver struct {
	mu     sync.Mutex
	events []string
}

func (o *recordingObserver) add(e string) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}
func (o *recordingObserver) CreateDone(r string, _ time.Duration) { o.add("create:" + r) }
func (o *recordingObserver) ExecDone(r string, _ time.Duration)   { o.add("exec:" + r) }
func (o *recordingObserver) Stopped(c string)                     { o.add("stopped:" + c) }
func (o *recordingObserver) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// testManager is a manager with a real store and no runtime.
func testManager(t *testing.T, cfg config.Config) (*Manager, *recordingObserver) {
	t.Helper()
	st, err := openStore(filepath.Join(t.TempDir(), "hutch.db"))
	if err != nil {
		t.Fatal(err)
	}
	obs := &recordingObserver{}
	m := &Manager{
		cfg:       cfg,
		log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		store:     st,
		sandboxes: map[string]*sandbox{},
		trace:     tracer{obs: obs},
		rts:       runtime.Single(runtimetest.New(t)),
	}
	m.reaper = newReaper(m)
	t.Cleanup(func() {
		m.destroying.Wait()
		st.close()
	})
	return m, obs
}

// addSandbox registers a runtime-less sandbox last active at lastActive,
// with inFlight execs running.
func addSandbox(t *testing.T, m *Manager, id string, idleSecs uint64, lastActive time.Time, inFlight int) *sandbox {
	t.Helper()
	rec := record{ID: id, Image: "python", IdleTimeoutSecs: idleSecs, CreatedAt: lastActive}
	if err := m.store.put(&rec); err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{rec: rec, slots: make(chan struct{}, 4), destroyed: make(chan struct{}), state: Running, changed: make(chan struct{}), lastActivity: lastActive}
	for range inFlight {
		sb.slots <- struct{}{}
	}
	m.sandboxes[id] = sb
	return sb
}

func TestReap(t *testing.T) {
	cfg := config.Default()
	cfg.MaxExecTimeoutMs = 300_000
	cfg.StoppedRetentionSecs = 600
	m, obs := testManager(t, cfg)
	now := time.Now()
	grace := 2*time.Second + 5*time.Minute + time.Minute // idle + max exec + a minute
	const (
		idle      = "00000000-0000-4000-8000-00000000000a"
		active    = "00000000-0000-4000-8000-00000000000b"
		busy      = "00000000-0000-4000-8000-00000000000c"
		overrun   = "00000000-0000-4000-8000-00000000000d"
		expired   = "00000000-0000-4000-8000-00000000000e"
		tombstone = "00000000-0000-4000-8000-00000000000f"
	)
	addSandbox(t, m, idle, 2, now.Add(-3*time.Second), 0)
	addSandbox(t, m, active, 2, now.Add(-1*time.Second), 0)
	addSandbox(t, m, busy, 2, now.Add(-grace+time.Second), 1)
	addSandbox(t, m, overrun, 2, now.Add(-grace-time.Second), 2)
	for _, id := range []string{expired, tombstone} {
		sb := addSandbox(t, m, id, 300, now.Add(-time.Hour), 0)
		sb.finish(endRequest, nil)
		close(sb.destroyed)
	}
	m.sandboxes[expired].stoppedAt = now.Add(-11 * time.Minute)

	m.reaper.Reap(now)
	m.destroying.Wait()

	ctx := context.Background()
	tests := []struct {
		id     string
		code   errdefs.Code // of Get; "" when it answers
		stored bool
	}{
		{idle, errdefs.CodeNotFound, false},
		{active, "", true},
		{busy, "", true},
		{overrun, errdefs.CodeNotFound, false},
		{expired, errdefs.CodeNotFound, false},
		{tombstone, "", true},
	}
	recs, _, err := m.store.all()
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, r := range recs {
		stored[r.ID] = true
	}
	for _, tt := range tests {
		info, err := m.Get(ctx, api.GetRequest{SandboxID: tt.id})
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: Get: %v", tt.id, err)
		case tt.code != "" && !errdefs.Is(err, tt.code):
			t.Errorf("%s: Get = %+v, %v; want %s", tt.id, info, err, tt.code)
		}
		if stored[tt.id] != tt.stored {
			t.Errorf("%s: in store = %v, want %v", tt.id, stored[tt.id], tt.stored)
		}
	}
	if info, _ := m.Get(ctx, api.GetRequest{SandboxID: active}); info.Stopped {
		t.Error("an active sandbox was stopped")
	}
	got := obs.list()
	if len(got) != 2 || got[0] != "stopped:idle" || got[1] != "stopped:idle" {
		t.Errorf("observer got %v, want two idle stops", got)
	}
}
