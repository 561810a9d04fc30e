package runtime

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bare is a runtime and instance with no optional ability; the tests never
// call their methods.
type bare struct{}

func (bare) Name() string                                                   { return "bare" }
func (bare) Start(context.Context, Spec) (Instance, error)                  { return nil, errors.New("unused") }
func (bare) Reconcile(context.Context, func(string) bool) ([]string, error) { return nil, nil }
func (bare) Conn() io.ReadWriteCloser                                       { return nil }
func (bare) Done() <-chan struct{}                                          { return nil }
func (bare) Exit() End                                                      { return End{} }
func (bare) StderrTail() string                                             { return "" }
func (bare) Destroy(context.Context) error                                  { return nil }

// able adds every optional ability.
type able struct{ bare }

func (able) Pause(context.Context) error                             { return nil }
func (able) Resume(context.Context) error                            { return nil }
func (able) Checkpoint(context.Context, string, bool) error          { return nil }
func (able) CaptureLayer(context.Context, string) error              { return nil }
func (able) Restore(context.Context, Spec, string) (Instance, error) { return nil, nil }
func (able) Resize(uint32, uint32) error                             { return nil }
func (able) Stats() (Stats, error)                                   { return Stats{}, nil }
func (a able) Abilities() Abilities                                  { return Discover(a, a) }
func (able) Mode() string                                            { return "emulated" }
func (able) Prepare(_ context.Context, img ImageRef) (Artifact, error) {
	return Artifact{Kind: ArtifactBlock, Path: "/cache/" + img.ID + ".img"}, nil
}

func TestAbilities(t *testing.T) {
	if got := AbilitiesOf(bare{}); got != (Abilities{}) || got.String() != "none" {
		t.Errorf("a runtime that reports nothing: %+v %q", got, got)
	}
	all := Abilities{Pause: true, Checkpoint: true, Resize: true, Stats: true, Layer: true}
	if got := AbilitiesOf(able{}); got != all || got.String() != "pause,checkpoint,resize,stats,layer" {
		t.Errorf("every ability: %+v %q", got, got)
	}
	// A checkpoint that cannot be restored is no ability.
	if got := Discover(bare{}, able{}); got.Checkpoint || !got.Pause {
		t.Errorf("instance abilities on a runtime without Restore: %+v", got)
	}
}

func TestInfoOf(t *testing.T) {
	if got := InfoOf(bare{}); got != (Info{Name: "bare", Abilities: "none"}) {
		t.Errorf("InfoOf(bare) = %+v", got)
	}
	if got := InfoOf(able{}); got.Mode != "emulated" || got.Abilities != "pause,checkpoint,resize,stats,layer" {
		t.Errorf("InfoOf(able) = %+v", got)
	}
}

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	art, err := Prepare(context.Background(), bare{}, ImageRef{ID: "abc", Rootfs: dir})
	if err != nil || art != (Artifact{Kind: ArtifactDir, Path: dir}) {
		t.Errorf("default Prepare = %+v, %v", art, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", file, filepath.Join(dir, "missing")} {
		if _, err := Prepare(context.Background(), bare{}, ImageRef{Rootfs: bad}); err == nil {
			t.Errorf("Prepare of rootfs %q: want an error", bad)
		}
	}
	if art, err := Prepare(context.Background(), able{}, ImageRef{ID: "abc"}); err != nil || art.Kind != ArtifactBlock || art.Path != "/cache/abc.img" {
		t.Errorf("a Preparer's Prepare = %+v, %v", art, err)
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	plain := filepath.Join(dir, "plain")
	for path, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(path, []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := FindBinary(exe, "tool"); err != nil || p != exe {
		t.Errorf("explicit path: %q, %v", p, err)
	}
	if _, err := FindBinary(plain, "plain"); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("not executable: %v", err)
	}
	t.Setenv("PATH", dir)
	if p, err := FindBinary("", "tool"); err != nil || p != exe {
		t.Errorf("on PATH: %q, %v", p, err)
	}
	if _, err := FindBinary("", "hutch-test-missing"); !errors.Is(err, ErrBinaryNotFound) {
		t.Errorf("missing: %v", err)
	}
}

func TestReservedPath(t *testing.T) {
	for _, p := range []string{"/", "/proc", "/proc/1", "/dev", "/dev/shm", "/sys", "/sys/fs/cgroup", "/.hutch", AgentPath} {
		if !ReservedPath(p) {
			t.Errorf("ReservedPath(%s) = false", p)
		}
	}
	for _, p := range []string{"/data", "/procs", "/device", "/system", "/.hutchy", "/tmp", "/home/dev"} {
		if ReservedPath(p) {
			t.Errorf("ReservedPath(%s) = true", p)
		}
	}
}
