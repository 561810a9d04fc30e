package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// reconciles counts the Reconcile calls of fakeRuntime; fakeRuntime is
// registered once, the tests run one after another.
var reconciles atomic.Int32

// fakeRuntime stands in for gVisor, which these tests cannot boot: the
// watchdog only builds a runtime and calls its Reconcile.
type fakeRuntime struct{}

func (fakeRuntime) Name() string { return "watchdog-test" }
func (fakeRuntime) Start(context.Context, runtime.Spec) (runtime.Instance, error) {
	panic("the watchdog never starts a sandbox")
}
func (fakeRuntime) Reconcile(_ context.Context, keep func(string) bool) ([]string, error) {
	if keep("any") {
		panic("the watchdog kept a sandbox")
	}
	reconciles.Add(1)
	return nil, nil
}

func init() {
	runtime.Register(runtime.Registration{Name: "watchdog-test", New: func(runtime.Options) (runtime.Runtime, error) { return fakeRuntime{}, nil }})
}

func TestWatchdog(t *testing.T) {
	watchdogLockWait = 300 * time.Millisecond
	tests := []struct {
		name string
		// dataDirHeld keeps the data dir lock, as a new daemon would.
		dataDirHeld bool
		// afterReady is what the daemon writes before it goes.
		afterReady    string
		wantReconcile bool
	}{
		{name: "daemon died", wantReconcile: true},
		{name: "clean shutdown stands down", afterReady: string(standDown)},
		{name: "a stray byte is no stand-down", afterReady: "x", wantReconcile: true},
		{name: "a new daemon holds the data dir", dataDirHeld: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reconciles.Store(0)
			dir := t.TempDir()
			if tt.dataDirHeld {
				release, err := lockDataDir(dir, slog.Default())
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- RunWatchdog(inR, outW, slog.Default()) }()
			job := watchdogJob{Runtimes: map[string]runtime.Options{"watchdog-test": {}}, LockPath: dataDirLock(dir)}
			go json.NewEncoder(inW).Encode(job)
			if line, err := bufio.NewReader(outR).ReadString('\n'); line != watchdogReady {
				t.Fatalf("watchdog said %q, %v", line, err)
			}
			io.WriteString(inW, tt.afterReady)
			if reconciles.Load() != 0 {
				t.Fatal("the watchdog acted while its daemon lived")
			}
			inW.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := reconciles.Load() == 1; got != tt.wantReconcile {
				t.Errorf("reconciled: %v, want %v", got, tt.wantReconcile)
			}
		})
	}
}

func TestDataDirLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockFile(filepath.Join(dir, lockFileName), 0); err != errLocked {
		t.Fatalf("second lock: %v, want errLocked", err)
	}
	release()
	again, err := lockFile(dataDirLock(dir), 0)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
