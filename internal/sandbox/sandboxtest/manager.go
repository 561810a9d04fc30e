package sandboxtest

import (
	"context"
	"io"
	"log/slog"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Manager is a real core over the in-process runtime (runtimetest): real
// agents joined over pipes, running the host's programs on the host's
// filesystem, without root. Its images are all ready (ReadyImages); its
// warm pool is off. It is closed at the end of the test.
func Manager(t *testing.T, cfg config.Config) *sandbox.Manager {
	t.Helper()
	cfg.WarmPoolAuto = false
	m, err := sandbox.New(context.Background(), sandbox.Options{
		Config:           cfg,
		Runtimes:         runtime.Single(runtimetest.New(t)),
		Images:           ReadyImages{Rootfs: t.TempDir()},
		StateDir:         t.TempDir(),
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		AgentCallTimeout: 10 * time.Second,
	})
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
	return m
}

// ReadyImages is an image store whose every catalog image (python and
// node) is ready: Rootfs, one empty directory, serves as every rootfs (an
// in-process agent uses the host's).
type ReadyImages struct{ Rootfs string }

func (s ReadyImages) Ensure(_ context.Context, name string, _ bool) (*image.Image, error) {
	return &image.Image{Name: name, ID: "id-" + name, Rootfs: s.Rootfs}, nil
}
func (s ReadyImages) Status(name string) api.ImageStatus {
	return api.ImageStatus{Name: name, State: "ready"}
}
func (s ReadyImages) Catalog() []image.Entry { return []image.Entry{{Name: "python"}, {Name: "node"}} }
func (s ReadyImages) Pull(ctx context.Context, name string) (*image.Image, error) {
	return s.Ensure(ctx, name, true)
}

// With is every catalog image when command is on the host's PATH.
func (s ReadyImages) With(command string) []string {
	if _, err := osexec.LookPath(command); err != nil {
		return nil
	}
	return []string{"python", "node"}
}
func (s ReadyImages) Remove(_ context.Context, name string, guard func(string) error) (bool, error) {
	return true, guard("id-" + name)
}
