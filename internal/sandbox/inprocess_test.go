package sandbox

import (
	"context"
	"io"
	"log/slog"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testImages is an image store whose every catalog image is ready: one
// empty directory serves as every rootfs (an in-process agent runs on the
// host's filesystem anyway).
type testImages struct{ rootfs string }

func (s *testImages) Ensure(_ context.Context, name string, _ bool) (*image.Image, error) {
	return &image.Image{Name: name, ID: "id-" + name, Rootfs: s.rootfs}, nil
}
func (s *testImages) Status(name string) api.ImageStatus {
	return api.ImageStatus{Name: name, State: "ready"}
}
func (s *testImages) Catalog() []image.Entry {
	return []image.Entry{{Name: "python"}, {Name: "node"}}
}

// With is every catalog image when command is on the host's PATH: an
// in-process agent runs the host's programs.
func (s *testImages) With(command string) []string {
	if _, err := osexec.LookPath(command); err != nil {
		return nil
	}
	return []string{"python", "node"}
}

// inprocess is a manager over the in-process runtime: real agents joined
// over pipes, so creates, execs and stops run without root. edit adjusts
// the config, whose automatic warm pool is off unless edit turns it on;
// the manager is closed at the end of the test.
func inprocess(t *testing.T, edit func(*config.Config)) (*Manager, *runtimetest.Runtime, *recordingObserver) {
	t.Helper()
	return inprocessWith(t, edit, nil)
}

// inprocessWith is inprocess whose manager options opts adjusts.
func inprocessWith(t *testing.T, edit func(*config.Config), opts func(*Options)) (*Manager, *runtimetest.Runtime, *recordingObserver) {
	t.Helper()
	cfg := config.Default()
	cfg.WarmPoolAuto = false
	if edit != nil {
		edit(&cfg)
	}
	rt := runtimetest.New(t)
	obs := &recordingObserver{}
	evlog, err := events.Open(filepath.Join(t.TempDir(), "events.db"), events.Options{MaxCount: 1000, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { evlog.Close() })
	o := Options{
		Config:           cfg,
		Runtimes:         runtime.Single(rt),
		Images:           &testImages{rootfs: t.TempDir()},
		StateDir:         t.TempDir(),
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer:         obs,
		Events:           evlog,
		AgentCallTimeout: 10 * time.Second,
	}
	if opts != nil {
		opts(&o)
	}
	m, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
	})
	return m, rt, obs
}

// create creates a sandbox of image and returns its id.
func create(t *testing.T, m *Manager, req api.CreateRequest) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.Create(ctx, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return resp.SandboxID
}

// stoppedWith waits until sandbox id is stopped and checks its cause and
// reason (want's Detail; "" checks only the cause).
func stoppedWith(t *testing.T, m *Manager, id string, cause, reason string) {
	t.Helper()
	var info api.SandboxInfo
	testutil.Eventually(t, 30*time.Second, func() bool {
		var err error
		info, err = m.Get(context.Background(), api.GetRequest{SandboxID: id})
		return err == nil && info.Stopped
	}, "%s", "sandbox "+id+" stops")
	if info.StopCause != cause || (reason != "" && info.StopReason != reason) {
		t.Errorf("sandbox stopped with cause %q reason %q; want %q %q", info.StopCause, info.StopReason, cause, reason)
	}
}

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}
