package metricsvc

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

func TestMetrics(t *testing.T) {
	sbs := &sandboxtest.Sandboxes{}
	sb := sbs.Add("alice")
	sb.Stats = runtime.Stats{CPUSeconds: 1.5, MemoryBytes: 3 << 20, Pids: 7, DiskBytes: 5 << 20}
	created := time.Now().Add(-90 * time.Second)
	sb.Vitals = sandbox.Vitals{CPUs: 2, MemoryMB: 512, CreatedAt: created, IdleSince: created.Add(30 * time.Second), ExecInFlight: 1}
	s := New(sbs, Limits{WritableLayerMB: 1024, Pids: 256})

	m, err := s.Metrics(as("alice"), api.MetricsRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	if m.SandboxID != sb.ID || m.CPUSeconds != 1.5 || m.MemoryBytes != 3<<20 || m.Pids != 7 || m.DiskBytes != 5<<20 ||
		m.MemoryLimitBytes != 512<<20 || m.DiskLimitBytes != 1024<<20 || m.PidsLimit != 256 || m.CPUs != 2 || m.ExecInFlight != 1 {
		t.Errorf("metrics %+v", m)
	}
	// A minute and a half old, idle for a minute (at least: the clock runs).
	if m.AgeSecs < 90 || m.AgeSecs > 3600 || m.IdleSecs < 60 || m.IdleSecs >= m.AgeSecs {
		t.Errorf("age %d s, idle %d s", m.AgeSecs, m.IdleSecs)
	}
	if sbs.Held() != 0 {
		t.Errorf("%d handles held after the call", sbs.Held())
	}

	// A paused sandbox is read; a hibernated one uses nothing.
	sbs.SetState(sb, sandbox.Paused)
	if m, err := s.Metrics(as("alice"), api.MetricsRequest{SandboxID: sb.ID}); err != nil || m.MemoryBytes != 3<<20 {
		t.Errorf("paused: %+v, %v", m, err)
	}
	sb.Vitals.Hibernated = true
	if m, err := s.Metrics(as("alice"), api.MetricsRequest{SandboxID: sb.ID}); err != nil || m.MemoryBytes != 0 || m.Pids != 0 || m.MemoryLimitBytes != 512<<20 {
		t.Errorf("hibernated: %+v, %v", m, err)
	}

	if _, err := s.Metrics(as("bob"), api.MetricsRequest{SandboxID: sb.ID}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("another owner's sandbox: %v, want S002", err)
	}
	sbs.SetState(sb, sandbox.Stopped)
	if _, err := s.Metrics(as("alice"), api.MetricsRequest{SandboxID: sb.ID}); !errdefs.Is(err, errdefs.CodeStopped) {
		t.Errorf("a stopped sandbox: %v, want S004", err)
	}
}
