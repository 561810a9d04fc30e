package idle

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fake is a Core over a list of sandboxes (S is the id); it records what
// the reaper asks of it, and runs Go at once.
type fake struct {
	mu        sync.Mutex
	sbs       map[string]*Sandbox[string]
	noPause   bool             // the runtime cannot pause
	pauseErr  error            // Pause's answer
	output    map[string]int64 // absent: the agent does not answer
	stopped   map[string]runtime.End
	paused    []string
	forgotten []string
	touched   []string
}

func newFake(sbs ...Sandbox[string]) *fake {
	f := &fake{sbs: map[string]*Sandbox[string]{}, output: map[string]int64{}, stopped: map[string]runtime.End{}}
	for _, sb := range sbs {
		sb.S = sb.ID
		f.sbs[sb.ID] = &sb
	}
	return f
}

func (f *fake) Sandboxes() []Sandbox[string] {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Sandbox[string]
	for _, sb := range f.sbs {
		out = append(out, *sb)
	}
	return out
}

func (f *fake) Stop(s string, end runtime.End) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.stopped[s]; !ok {
		f.stopped[s] = end
	}
	if sb := f.sbs[s]; sb != nil {
		sb.Stopped, sb.Running, sb.Paused = true, false, false
	}
	done := make(chan struct{})
	close(done)
	return done
}

func (f *fake) CanPause(string) bool { return !f.noPause }

func (f *fake) Pause(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = append(f.paused, s)
	return f.pauseErr
}

func (f *fake) Forget(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, s)
	delete(f.sbs, s)
	return nil
}

func (f *fake) Output(s string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.output[s]
	return n, ok
}

func (f *fake) Touch(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched = append(f.touched, s)
}

func (f *fake) Go(fn func()) { fn() }

func testConfig() config.Config {
	cfg := config.Default()
	cfg.MaxExecTimeoutMs = 300_000
	cfg.StoppedRetentionSecs = 600
	cfg.PausedRetentionSecs = 60
	return cfg
}

func newReaper(f *fake) *Reaper[string] {
	return New[string](testConfig(), f, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func TestReap(t *testing.T) {
	now := time.Now()
	grace := 2*time.Second + 5*time.Minute + time.Minute // idle + max exec + a minute
	running := func(id string, idleSecs uint64, since time.Time, execs int) Sandbox[string] {
		return Sandbox[string]{ID: id, Running: true, IdleTimeoutSecs: idleSecs, IdleSince: since, Execs: execs}
	}
	f := newFake(
		running("idle", 2, now.Add(-3*time.Second), 0),
		running("active", 2, now.Add(-time.Second), 0),
		running("busy", 2, now.Add(-grace+time.Second), 1),
		running("overrun", 2, now.Add(-grace-time.Second), 2),
		Sandbox[string]{ID: "expired", Stopped: true, StoppedAt: now.Add(-11 * time.Minute)},
		Sandbox[string]{ID: "tombstone", Stopped: true, StoppedAt: now.Add(-9 * time.Minute)},
		Sandbox[string]{ID: "lifetime", Running: true, IdleTimeoutSecs: 300, IdleSince: now, ExpiresAt: now},
		Sandbox[string]{ID: "renewed", Running: true, IdleTimeoutSecs: 300, IdleSince: now, ExpiresAt: now.Add(time.Second)},
		Sandbox[string]{ID: "paused-long", Paused: true, PausedAt: now.Add(-61 * time.Second), IdleSince: now.Add(-time.Hour), IdleTimeoutSecs: 1},
		Sandbox[string]{ID: "paused", Paused: true, PausedAt: now.Add(-59 * time.Second), IdleSince: now.Add(-time.Hour), IdleTimeoutSecs: 1},
		Sandbox[string]{ID: "booting", IdleSince: now.Add(-time.Hour), IdleTimeoutSecs: 1},
	)
	newReaper(f).Reap(now)

	wantStops := map[string]runtime.End{
		"idle": EndIdle, "overrun": EndIdle, "lifetime": EndLifetime, "paused-long": EndPausedTooLong,
	}
	if len(f.stopped) != len(wantStops) {
		t.Errorf("stopped %v, want %v", f.stopped, wantStops)
	}
	for id, end := range wantStops {
		if got, ok := f.stopped[id]; !ok || got != end {
			t.Errorf("%s: stopped with %+v (%v), want %+v", id, got, ok, end)
		}
	}
	// An idle sandbox is forgotten once its teardown is over; one ended
	// by its lifetime or paused retention stays listed as stopped.
	if got, want := sorted(f.forgotten), []string{"expired", "idle", "overrun"}; !slices.Equal(got, want) {
		t.Errorf("forgotten %v, want %v", got, want)
	}
	if len(f.paused) != 0 || len(f.touched) != 0 {
		t.Errorf("paused %v, touched %v; want none", f.paused, f.touched)
	}
}

func TestOnIdle(t *testing.T) {
	now := time.Now()
	idle := Sandbox[string]{ID: "a", Running: true, IdleTimeoutSecs: 1, IdleSince: now.Add(-2 * time.Second), OnIdle: api.OnIdlePause}
	t.Run("pause", func(t *testing.T) {
		f := newFake(idle)
		newReaper(f).Reap(now)
		if !slices.Equal(f.paused, []string{"a"}) || len(f.stopped) != 0 || len(f.forgotten) != 0 {
			t.Errorf("paused %v, stopped %v, forgotten %v; want only a pause", f.paused, f.stopped, f.forgotten)
		}
	})
	t.Run("pause fails", func(t *testing.T) {
		f := newFake(idle)
		f.pauseErr = errors.New("no")
		newReaper(f).Reap(now)
		// The failure is logged; the sandbox is left for the next pass.
		if !slices.Equal(f.paused, []string{"a"}) || len(f.stopped) != 0 {
			t.Errorf("paused %v, stopped %v; want a pause only", f.paused, f.stopped)
		}
	})
	t.Run("pause at the end of its lifetime", func(t *testing.T) {
		busy := Sandbox[string]{ID: "b", Running: true, IdleTimeoutSecs: 3600, IdleSince: now, ExpiresAt: now.Add(-time.Second), OnIdle: api.OnIdlePause}
		f := newFake(busy)
		newReaper(f).Reap(now)
		if !slices.Equal(f.paused, []string{"b"}) || len(f.stopped) != 0 {
			t.Errorf("paused %v, stopped %v; want a pause only", f.paused, f.stopped)
		}
	})
	t.Run("runtime cannot pause", func(t *testing.T) {
		f := newFake(idle)
		f.noPause = true
		newReaper(f).Reap(now)
		if len(f.paused) != 0 || f.stopped["a"] != EndIdle || !slices.Equal(f.forgotten, []string{"a"}) {
			t.Errorf("paused %v, stopped %v, forgotten %v; want an idle stop", f.paused, f.stopped, f.forgotten)
		}
	})
}

// TestOutputIsActivity: an idle sandbox whose processes wrote since the
// last look is touched, not reaped; one whose agent does not answer is.
func TestOutputIsActivity(t *testing.T) {
	now := time.Now()
	sb := func(id string) Sandbox[string] {
		return Sandbox[string]{ID: id, Running: true, IdleTimeoutSecs: 1, IdleSince: now.Add(-time.Minute)}
	}
	f := newFake(sb("chatty"), sb("silent"), sb("mute"), sb("empty"))
	f.output["chatty"], f.output["silent"], f.output["empty"] = 10, 10, 0
	r := newReaper(f)
	r.Reap(now)
	// First look: any output is new; no output at all is not.
	if got, want := sorted(f.touched), []string{"chatty", "silent"}; !slices.Equal(got, want) {
		t.Errorf("first pass touched %v, want %v", got, want)
	}
	if got, want := sorted(f.forgotten), []string{"empty", "mute"}; !slices.Equal(got, want) {
		t.Errorf("first pass reaped %v, want %v", got, want)
	}
	f.touched = nil
	f.output["chatty"] = 11
	r.Reap(now)
	if !slices.Equal(f.touched, []string{"chatty"}) {
		t.Errorf("second pass touched %v, want [chatty]", f.touched)
	}
	if _, ok := f.stopped["silent"]; !ok || f.stopped["silent"] != EndIdle {
		t.Errorf("a sandbox silent since the last look was not reaped: %v", f.stopped)
	}
	// The marks of sandboxes gone are dropped.
	r.Reap(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen["silent"]; ok || len(r.seen) != 1 {
		t.Errorf("marks %v, want chatty's only", r.seen)
	}
}

func TestEvery(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		sbs  []Sandbox[string]
		want time.Duration
	}{
		{"no sandboxes", nil, Interval},
		{"long timeouts", []Sandbox[string]{{ID: "a", Running: true, IdleTimeoutSecs: 300}, {ID: "b", Running: true, IdleTimeoutSecs: 60}}, Interval},
		{"2 s timeout", []Sandbox[string]{{ID: "a", Running: true, IdleTimeoutSecs: 300}, {ID: "b", Running: true, IdleTimeoutSecs: 2}}, time.Second},
		{"1 s timeout", []Sandbox[string]{{ID: "a", Running: true, IdleTimeoutSecs: 1}}, 500 * time.Millisecond},
		{"lifetime", []Sandbox[string]{{ID: "a", Running: true, IdleTimeoutSecs: 300, ExpiresAt: now.Add(3 * time.Second)}}, 3 * time.Second},
		{"paused retention", []Sandbox[string]{{ID: "a", Paused: true, PausedAt: now.Add(-58 * time.Second)}}, 2 * time.Second},
		{"at least MinInterval", []Sandbox[string]{{ID: "a", Running: true, IdleTimeoutSecs: 300, ExpiresAt: now.Add(-time.Hour)}}, MinInterval},
		// A stopped or booting sandbox's timeout does not count.
		{"stopped and booting", []Sandbox[string]{{ID: "a", Stopped: true, IdleTimeoutSecs: 1}, {ID: "b", IdleTimeoutSecs: 1}}, Interval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newReaper(newFake(tt.sbs...)).Every(now); got != tt.want {
				t.Errorf("Every = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunAndWake: Wake never blocks, the loop reaps on its timer, and
// Close ends the loop.
func TestRunAndWake(t *testing.T) {
	f := newFake(Sandbox[string]{ID: "a", Running: true, IdleTimeoutSecs: 1, IdleSince: time.Now().Add(-time.Hour)})
	r := newReaper(f)
	for range 10 {
		r.Wake() // no loop running: must not block
	}
	go r.Run()
	testutil.Eventually(t, 30*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Equal(f.forgotten, []string{"a"})
	}, "the loop reaps the idle sandbox")
	r.Close()
}

// TestWakesDoNotPutOffPasses: wakes coming faster than the interval (a
// busy daemon's creates) still let the passes run, which forget the
// stopped sandboxes past their retention (issue 38: 4, the soak's heap
// growth).
func TestWakesDoNotPutOffPasses(t *testing.T) {
	var sbs []Sandbox[string]
	for _, id := range []string{"a", "b", "c"} {
		sbs = append(sbs, Sandbox[string]{ID: id, Stopped: true, StoppedAt: time.Now().Add(-time.Hour)})
	}
	// A live sandbox, never idle, whose 1 s idle timeout sets the
	// interval to half a second.
	sbs = append(sbs, Sandbox[string]{ID: "live", Running: true, IdleTimeoutSecs: 1, IdleSince: time.Now().Add(time.Hour)})
	f := newFake(sbs...)
	r := newReaper(f)
	go r.Run()
	defer r.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				r.Wake()
				time.Sleep(time.Millisecond) // a wake every millisecond, far inside the interval
			}
		}
	}()
	testutil.Eventually(t, 30*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.forgotten) == 3
	}, "the stopped sandboxes are forgotten under a stream of wakes")
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := sorted(f.forgotten); !slices.Equal(got, []string{"a", "b", "c"}) || f.sbs["live"] == nil {
		t.Errorf("forgotten %v, want a, b, c (and the live sandbox kept)", got)
	}
}
