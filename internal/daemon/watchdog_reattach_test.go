package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// adopterRuntime is a fake runtime with two sandboxes, "pod" started to
// be reattached and "plain" not; it records what Reconcile destroyed.
type adopterRuntime struct {
	mu        sync.Mutex
	destroyed []string
}

var reattachRT = &adopterRuntime{}

func (*adopterRuntime) Name() string { return "watchdog-reattach-test" }
func (*adopterRuntime) Start(context.Context, runtime.Spec) (runtime.Instance, error) {
	panic("the watchdog never starts a sandbox")
}
func (*adopterRuntime) Adopt(context.Context, string) (runtime.Instance, error) {
	panic("the watchdog never adopts a sandbox")
}
func (*adopterRuntime) Reattachable(id string) bool { return id == "pod" }
func (a *adopterRuntime) Reconcile(_ context.Context, keep func(string) bool) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, id := range []string{"pod", "plain"} {
		if !keep(id) && !slices.Contains(a.destroyed, id) {
			a.destroyed = append(a.destroyed, id)
			out = append(out, id)
		}
	}
	return out, nil
}

func (a *adopterRuntime) gone() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.destroyed)
}

func init() {
	runtime.Register(runtime.Registration{Name: "watchdog-reattach-test", New: func(runtime.Options) (runtime.Runtime, error) { return reattachRT, nil }})
}

// TestWatchdogReattachGrace (issue 35): with a ReattachGrace, a dead
// daemon's watchdog destroys the other sandboxes at once and leaves the
// reattachable ones for the grace: to a new daemon that holds the data dir
// by then, else it destroys them too. A daemon that shut down leaving
// them (the leave byte, after a SIGTERM) is the same.
func TestWatchdogReattachGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		comeBack bool
		// lastWords is what the daemon writes before it goes.
		lastWords string
	}{
		{name: "no daemon comes back"},
		{name: "a daemon comes back", comeBack: true},
		{name: "shut down, no daemon comes back", lastWords: string(leaveReattachable)},
		{name: "shut down, a daemon comes back", comeBack: true, lastWords: string(leaveReattachable)},
	} {
		comeBack := tc.comeBack
		t.Run(tc.name, func(t *testing.T) {
			reattachRT.mu.Lock()
			reattachRT.destroyed = nil
			reattachRT.mu.Unlock()
			dir := t.TempDir()
			grace := 200 * time.Millisecond
			if comeBack {
				grace = 5 * time.Second // time enough to take the lock
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- RunWatchdog(inR, outW, slog.Default()) }()
			job := watchdogJob{Runtimes: map[string]runtime.Options{"watchdog-reattach-test": {}}, LockPath: dataDirLock(dir), ReattachGrace: grace}
			go json.NewEncoder(inW).Encode(job)
			if line, err := bufio.NewReader(outR).ReadString('\n'); line != watchdogReady {
				t.Fatalf("watchdog said %q, %v", line, err)
			}
			io.WriteString(inW, tc.lastWords)
			inW.Close() // the daemon died, or exited
			testutil.Eventually(t, 10*time.Second, func() bool { return slices.Contains(reattachRT.gone(), "plain") }, "the plain sandbox destroyed")
			if comeBack {
				release, err := lockDataDir(dir, slog.Default())
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := []string{"plain"}
			if !comeBack {
				want = append(want, "pod")
			}
			if got := reattachRT.gone(); !slices.Equal(got, want) {
				t.Errorf("destroyed %v, want %v", got, want)
			}
		})
	}
}

// TestWatchdogStopReattach (issue 35): a clean shutdown that left
// reattachable sandboxes writes the leave byte and keeps the pipe open
// (the watchdog acts once the daemon exits, its lock released); without
// reattach it stands down and closes it.
func TestWatchdogStopReattach(t *testing.T) {
	for _, reattach := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		close(exited)
		(&watchdog{pipe: w, exited: exited}).stop(true, reattach)
		want := string(standDown)
		if reattach {
			want = string(leaveReattachable)
			w.Close() // this process's exit
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != want {
			t.Errorf("reattach %v: the watchdog read %q, %v; want %q", reattach, got, err, want)
		}
	}
}
