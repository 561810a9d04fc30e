package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/gvisor"
)

// closes counts the Close calls of closingRuntime.
var closes atomic.Int32

// closingRuntime is a runtime that records its Close, for the daemon's
// start-up cleanup; like fakeRuntime, it never starts a sandbox.
type closingRuntime struct{ fakeRuntime }

func (closingRuntime) Name() string { return "daemon-test" }
func (closingRuntime) Close() error { closes.Add(1); return nil }

func init() {
	runtime.Register(runtime.Registration{Name: "daemon-test", New: func(runtime.Options) (runtime.Runtime, error) { return closingRuntime{}, nil }})
}

func TestRuntimeOptions(t *testing.T) {
	cfg := config.Default()
	if err := cfg.Runtimes.Set("gvisor", "systrap_fast_path", gvisor.FastPathOff); err != nil {
		t.Fatal(err)
	}
	opts, err := runtimeOptions(cfg, "gvisor", "/data")
	if err != nil {
		t.Fatal(err)
	}
	var g gvisor.Settings
	if err := json.Unmarshal(opts.Settings, &g); err != nil || g != (gvisor.Settings{Platform: "systrap", SystrapFastPath: "off", RestoreAhead: 2, RestoreAheadSources: 4}) {
		t.Errorf("settings %s decode to %+v (%v)", opts.Settings, g, err)
	}
	if opts.StateDir != "/data/gvisor" {
		t.Errorf("options %+v", opts)
	}
	// The watchdog is handed the same options over a pipe.
	b, err := json.Marshal(watchdogJob{Runtimes: map[string]runtime.Options{"gvisor": opts}})
	if err != nil {
		t.Fatal(err)
	}
	var job watchdogJob
	if err := json.Unmarshal(b, &job); err != nil || !bytes.Equal(job.Runtimes["gvisor"].Settings, opts.Settings) {
		t.Errorf("watchdog job settings %s (%v), want %s", job.Runtimes["gvisor"].Settings, err, opts.Settings)
	}

	if opts, err := runtimeOptions(cfg, "daemon-test", "/data"); err != nil || opts.Settings != nil {
		t.Errorf("a runtime without a block got settings %s (%v)", opts.Settings, err)
	}
}

// TestRunscOnlyForGVisor: with runsc nowhere, another default runtime
// starts, gVisor is listed as unavailable with what is missing, and a
// daemon whose default is gVisor does not start.
func TestRunscOnlyForGVisor(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	log := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	cfg.DefaultRuntime = "daemon-test"
	cfg.OfferedRuntimes = []string{"daemon-test", "gvisor"}
	set, _, err := startRuntimes(cfg, t.TempDir(), log)
	if err != nil {
		t.Fatalf("a default runtime other than gvisor: %v", err)
	}
	if _, err := set.Get("gvisor"); !errors.Is(err, runtime.ErrRuntimeUnavailable) || !strings.Contains(err.Error(), "runsc not found") {
		t.Errorf("gvisor without runsc: %v", err)
	}
	if infos := set.Infos(); len(infos) != 2 || !infos[0].Default || infos[1].Available || infos[1].Unavailable == "" {
		t.Errorf("infos %+v", infos)
	}
	cfg.DefaultRuntime = "gvisor"
	_, _, err = startRuntimes(cfg, t.TempDir(), log)
	if err == nil || !strings.Contains(err.Error(), "runsc not found") || !strings.Contains(err.Error(), "runtimes.gvisor.runsc_path") {
		t.Fatalf("gvisor without runsc as the default: %v", err)
	}
}

func TestRunscFlagOverridesTheBlock(t *testing.T) {
	cfg, err := config.Parse([]byte("runtimes:\n  gvisor:\n    runsc_path: /from/config\n"))
	if err != nil {
		t.Fatal(err)
	}
	runscPath := func() string {
		t.Helper()
		s, err := cfg.Runtimes.Decode("gvisor")
		if err != nil {
			t.Fatal(err)
		}
		return s.(*gvisor.Settings).RunscPath
	}
	if err := applyRuntimeFlags(Options{}, &cfg); err != nil || runscPath() != "/from/config" {
		t.Errorf("without the flag, runsc_path = %q (%v)", runscPath(), err)
	}
	if err := applyRuntimeFlags(Options{RunscPath: "/opt/runsc"}, &cfg); err != nil || runscPath() != "/opt/runsc" {
		t.Errorf("with --runsc-path, runsc_path = %q (%v)", runscPath(), err)
	}
}

// TestFailedStartReleasesEverything: a start that fails half-way (its
// event log cannot be opened) closes the runtime and unlocks the data dir;
// one whose address is taken fails before it starts anything.
func TestFailedStartReleasesEverything(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	agent := filepath.Join(dir, "hutch-agent")
	conf := filepath.Join(dir, "hutch.yaml")
	if err := os.WriteFile(agent, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("default_runtime: daemon-test\noffered_runtimes: [daemon-test]\ncrash_watchdog: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	closes.Store(0)
	opts := Options{ConfigPath: conf, Listen: taken.Addr().String(), DataDir: filepath.Join(dir, "data"),
		AgentPath: agent, Logger: slog.New(slog.DiscardHandler)}
	err = Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "--listen "+taken.Addr().String()+": the address is in use") {
		t.Fatalf("Run on a taken address: %v", err)
	}
	if closes.Load() != 0 {
		t.Errorf("a start refused for its address closed the runtime %d times: it started it", closes.Load())
	}
	// The event log's file is a directory: the start fails once the
	// runtime is up.
	if err := os.MkdirAll(filepath.Join(opts.DataDir, "events.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	opts.Listen = "127.0.0.1:0"
	if err := Run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "events.db") {
		t.Fatalf("Run with a directory for events.db: %v", err)
	}
	if closes.Load() != 1 {
		t.Errorf("runtime closed %d times, want once", closes.Load())
	}
	release, err := lockFile(dataDirLock(filepath.Join(dir, "data")), 0)
	if err != nil {
		t.Fatalf("data dir still locked: %v", err)
	}
	release()
}
