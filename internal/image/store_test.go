package image

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// The tests below replace mmdebstrap (which needs root and a mirror) with
// fake builders; the integration test runs the real one.

// newTestStore opens a store on a fresh cache that builds with b.
func newTestStore(t *testing.T, dir string, b builder) *Store {
	t.Helper()
	s, err := NewStore(Options{
		CacheDir: dir,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Suite:    "bookworm",
		Mirror:   "http://mirror.invalid/debian",
	})
	if err != nil {
		t.Fatal(err)
	}
	s.build = b
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeRootfs is a builder that writes a tiny root filesystem.
func fakeRootfs(_ context.Context, _ recipe, dst string, progress func(string)) error {
	progress("I: extracting archives...")
	if err := os.MkdirAll(filepath.Join(dst, "usr/bin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "usr/bin/python3"), []byte("#!fake\n"), 0o755)
}

// countingBuilder wraps b and counts its calls.
func countingBuilder(b builder) (builder, *atomic.Int32) {
	var n atomic.Int32
	return func(ctx context.Context, r recipe, dst string, progress func(string)) error {
		n.Add(1)
		return b(ctx, r, dst, progress)
	}, &n
}

// waitingCtx is ctx, but sends on waiting the first time a caller asks
// for its Done channel: an Ensure does that only once it holds the image's
// build and waits for it.
func waitingCtx(ctx context.Context, waiting chan<- struct{}) context.Context {
	return &signalCtx{Context: ctx, waiting: waiting}
}

type signalCtx struct {
	context.Context
	once    sync.Once
	waiting chan<- struct{}
}

func (c *signalCtx) Done() <-chan struct{} {
	c.once.Do(func() { c.waiting <- struct{}{} })
	return c.Context.Done()
}

// blockingBuilder reports a progress line, then waits for release (or the
// build's context) before writing a rootfs.
func blockingBuilder(started chan<- struct{}, release <-chan struct{}) builder {
	return func(ctx context.Context, r recipe, dst string, progress func(string)) error {
		progress("I: downloading packages with apt...")
		close(started)
		select {
		case <-release:
			return fakeRootfs(ctx, r, dst, progress)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// failingBuilder writes part of a rootfs, prints many lines and fails.
func failingBuilder(ctx context.Context, _ recipe, dst string, progress func(string)) error {
	if err := os.MkdirAll(filepath.Join(dst, "etc"), 0o755); err != nil {
		return err
	}
	script := `for i in $(seq 1 300); do echo "W: noise line $i" >&2; done; echo "E: Unable to locate package python3" >&2; exit 1`
	return runLogged(ctx, []string{"sh", "-c", script}, nil, progress)
}

func TestEnsurePublishesCompleteImage(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, dir, fakeRootfs)
	img, err := s.Ensure(t.Context(), "python", true)
	if err != nil {
		t.Fatal(err)
	}
	p := s.presets["python"]
	if img.Name != "python" || img.Kind != KindPreset || img.ID != p.id || img.Ref != "debian:bookworm+ca-certificates+git+python-is-python3+python3" {
		t.Errorf("image = %+v", img)
	}
	if want := filepath.Join(dir, "images", p.id, "rootfs"); img.Rootfs != want {
		t.Errorf("Rootfs = %s, want %s", img.Rootfs, want)
	}
	if !slices.Equal(img.Config.Env, defaultConfig().Env) || img.Config.WorkingDir != "/" || img.Config.User != "" {
		t.Errorf("Config = %+v", img.Config)
	}
	if img.SizeBytes != int64(len("#!fake\n")) || img.BuiltAt.IsZero() {
		t.Errorf("SizeBytes = %d, BuiltAt = %v", img.SizeBytes, img.BuiltAt)
	}
	if _, err := os.Stat(filepath.Join(img.Rootfs, "usr/bin/python3")); err != nil {
		t.Error(err)
	}
	st, err := os.Stat(filepath.Join(img.Rootfs, ".hutch"))
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o755 {
		t.Errorf(".hutch: %v, %v", st, err)
	}
	st, err = os.Stat(filepath.Join(img.Rootfs, ".hutch/hutch-agent"))
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o755 || st.Size() != 0 {
		t.Errorf(".hutch/hutch-agent: %v, %v", st, err)
	}
	var meta map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "images", p.id, "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "kind", "ref", "id", "config", "size_bytes", "built_at"} {
		if _, ok := meta[k]; !ok {
			t.Errorf("image.json lacks %q: %s", k, b)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ not empty after the build: %v", left)
	}

	// A second store on the same cache (another process, a restart) finds
	// the image without building.
	again := newTestStore(t, dir, func(context.Context, recipe, string, func(string)) error {
		t.Error("built an image that is cached")
		return errors.New("unexpected build")
	})
	got, ok := again.Lookup("python")
	if !ok || got.ID != img.ID || got.Rootfs != img.Rootfs || got.SizeBytes != img.SizeBytes {
		t.Errorf("Lookup = %+v, %v; want %+v", got, ok, img)
	}
	if _, err := again.Ensure(t.Context(), "python", false); err != nil {
		t.Errorf("Ensure(install=false) of a cached image: %v", err)
	}
}

func TestEnsureErrors(t *testing.T) {
	tests := []struct {
		name    string
		image   string
		install bool
		build   builder
		code    errdefs.Code
		want    []string // substrings of the message
		suffix  string
	}{
		{name: "unknown name", image: "ruby", install: true, build: fakeRootfs,
			code: errdefs.CodeImageNotAllowed, want: []string{`"ruby"`, "python, node"}},
		{name: "not built, install false", image: "node", install: false, build: fakeRootfs,
			code: errdefs.CodeImageMissing, want: []string{"hutch image pull node"}},
		{name: "build fails", image: "python", install: true, build: failingBuilder,
			code: errdefs.CodeImagePull, want: []string{"building image python", "exit status 1", "W: noise line 300"},
			suffix: "E: Unable to locate package python3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newTestStore(t, dir, tt.build)
			_, err := s.Ensure(t.Context(), tt.image, tt.install)
			if got := errdefs.CodeOf(err); got != tt.code {
				t.Fatalf("code = %s (%v), want %s", got, err, tt.code)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			if !strings.HasSuffix(msg, tt.suffix) {
				t.Errorf("message does not end with %q:\n%s", tt.suffix, msg)
			}
			if tt.code == errdefs.CodeImagePull {
				if !tt.code.Retryable() {
					t.Error("S102 is not retryable")
				}
				_, tail, _ := strings.Cut(msg, "last output:\n")
				if len(tail) > maxTailBytes || strings.Contains(msg, "noise line 1\n") {
					t.Errorf("output tail is %d bytes, want the last ≤ %d", len(tail), maxTailBytes)
				}
			}
			// Nothing half-built is left where a later Ensure would find it.
			for _, sub := range []string{"images", "tmp"} {
				if left, _ := os.ReadDir(filepath.Join(dir, sub)); len(left) != 0 {
					t.Errorf("%s/ holds %v after a failed Ensure", sub, left)
				}
			}
			if st := s.Status(tt.image); st.State != StateMissing {
				t.Errorf("Status = %+v, want missing", st)
			}
		})
	}
}

func TestFailedBuildIsRetried(t *testing.T) {
	var calls atomic.Int32
	s := newTestStore(t, t.TempDir(), func(ctx context.Context, r recipe, dst string, progress func(string)) error {
		if calls.Add(1) == 1 {
			return errors.New("mirror unreachable")
		}
		return fakeRootfs(ctx, r, dst, progress)
	})
	if _, err := s.Ensure(t.Context(), "python", true); !errdefs.Is(err, errdefs.CodeImagePull) {
		t.Fatalf("first Ensure: %v, want S102", err)
	}
	if _, err := s.Ensure(t.Context(), "python", true); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("builds = %d, want 2", n)
	}
}

func TestConcurrentEnsureBuildsOnce(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	build, calls := countingBuilder(blockingBuilder(started, release))
	s := newTestStore(t, t.TempDir(), build)

	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	joined := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			img, err := s.Ensure(waitingCtx(t.Context(), joined), "python", true)
			if err == nil {
				ids[i] = img.ID
			}
			errs[i] = err
		})
	}
	<-started
	for range n { // every caller waits on the build before it ends
		<-joined
	}
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != s.presets["python"].id {
			t.Errorf("caller %d: id %q, err %v", i, ids[i], errs[i])
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
}

func TestCallerCancelDoesNotStopBuild(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	build, calls := countingBuilder(blockingBuilder(started, release))
	s := newTestStore(t, t.TempDir(), build)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Ensure(ctx, "python", true)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Ensure: %v, want context.Canceled", err)
	}
	if st := s.Status("python"); st.State != StateBuilding {
		t.Fatalf("Status after the caller left = %+v, want building", st)
	}
	close(release)
	if _, err := s.Ensure(t.Context(), "python", true); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
}

func TestBuildTimeout(t *testing.T) {
	started := make(chan struct{})
	s := newTestStore(t, t.TempDir(), blockingBuilder(started, nil))
	s.buildTimeout = 50 * time.Millisecond
	_, err := s.Ensure(t.Context(), "python", true)
	if !errdefs.Is(err, errdefs.CodeImagePull) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ensure = %v, want S102 wrapping the deadline", err)
	}
}

func TestCloseStopsBuilds(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	s := newTestStore(t, dir, blockingBuilder(started, nil))
	errc := make(chan error, 1)
	go func() {
		_, err := s.Ensure(t.Context(), "python", true)
		errc <- err
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errdefs.Is(err, errdefs.CodeImagePull) || !errors.Is(err, context.Canceled) {
		t.Errorf("Ensure during Close = %v, want S102 wrapping context.Canceled", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ holds %v after Close", left)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Ensure(t.Context(), "python", true); !errdefs.Is(err, errdefs.CodeImagePull) {
		t.Errorf("Ensure after Close = %v, want S102", err)
	}
}

func TestStatusTransitions(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := newTestStore(t, t.TempDir(), blockingBuilder(started, release))

	if st := s.Status("python"); st.State != StateMissing || st.Name != "python" {
		t.Errorf("before: %+v, want missing", st)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Ensure(t.Context(), "python", true)
		done <- err
	}()
	<-started
	testutil.Eventually(t, 30*time.Second, func() bool { return s.Status("python").ElapsedSecs > 0 }, "the build's elapsed time shows")
	st := s.Status("python")
	if st.State != StateBuilding || st.ElapsedSecs <= 0 || st.Detail != "I: downloading packages with apt..." {
		t.Errorf("during: %+v, want building with elapsed time and detail", st)
	}
	if _, ok := s.Lookup("python"); ok {
		t.Error("Lookup found an image still building")
	}
	if _, err := s.Ensure(t.Context(), "python", false); !errdefs.Is(err, errdefs.CodeImageMissing) {
		t.Errorf("Ensure(install=false) during the build: %v, want S101", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st = s.Status("python")
	if st.State != StateReady || st.ID != s.presets["python"].id || st.SizeBytes <= 0 || st.Detail != "" {
		t.Errorf("after: %+v, want ready with id and size", st)
	}
	if st := s.Status("node"); st.State != StateMissing {
		t.Errorf("other image: %+v, want missing", st)
	}
}

func TestNewStoreRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, dir, fakeRootfs)

	// A crash's leftover, and a build another store is running right now.
	crashed := filepath.Join(dir, "tmp", "0123abcd")
	busy := filepath.Join(dir, "tmp", "4567ef01")
	for _, d := range []string{crashed, busy} {
		if err := os.MkdirAll(filepath.Join(d, "rootfs/usr"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unlock, ok, err := s.cache.tryLock("4567ef01")
	if err != nil || !ok {
		t.Fatalf("tryLock = %v, %v", ok, err)
	}
	defer unlock()

	newTestStore(t, dir, fakeRootfs)
	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Errorf("leftover of a crashed build still there: %v", err)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("removed the directory of a running build: %v", err)
	}
}

func TestInvalidEntryIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	build, calls := countingBuilder(fakeRootfs)
	s := newTestStore(t, dir, build)
	if _, err := s.Ensure(t.Context(), "python", true); err != nil {
		t.Fatal(err)
	}
	id := s.presets["python"].id
	if err := os.Remove(filepath.Join(dir, "images", id, "image.json")); err != nil {
		t.Fatal(err)
	}
	fresh := newTestStore(t, dir, build)
	if _, ok := fresh.Lookup("python"); ok {
		t.Fatal("Lookup accepted an entry without image.json")
	}
	if _, err := fresh.Ensure(t.Context(), "python", true); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("builds = %d, want 2", got)
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	s := newTestStore(t, t.TempDir(), fakeRootfs)
	img, err := s.Ensure(t.Context(), "python", true)
	if err != nil {
		t.Fatal(err)
	}
	img.Config.Env[0] = "PATH=/tampered"
	img.Rootfs = "/tampered"
	got, _ := s.Lookup("python")
	if got.Config.Env[0] == "PATH=/tampered" || got.Rootfs == "/tampered" {
		t.Errorf("a caller's change reached the store: %+v", got)
	}
}

func TestNewStoreRequiresCacheDir(t *testing.T) {
	if _, err := NewStore(Options{}); err == nil || !strings.Contains(err.Error(), "cache dir is required") {
		t.Errorf("NewStore without CacheDir: %v", err)
	}
}

func TestPresetsMatchConfig(t *testing.T) {
	s := newTestStore(t, t.TempDir(), fakeRootfs)
	if got := s.Presets(); !slices.Equal(got, config.Presets) {
		t.Errorf("Presets() = %v, config.Presets = %v", got, config.Presets)
	}
}
