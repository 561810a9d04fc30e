package image

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

func TestCatalogOrder(t *testing.T) {
	s := newCustomStore(t, t.TempDir(), map[string]string{
		"zeta": "example.com/z:1", "alpha": "oci-layout:/srv/alpha:v1", "mid": "docker-archive:/srv/mid.tar",
	})
	var got []string
	for _, e := range s.Catalog() {
		got = append(got, e.Name+"/"+e.Kind+"/"+e.Ref)
	}
	want := []string{
		"python/preset/debian:bookworm+ca-certificates+git+python-is-python3+python3", "node/preset/debian:bookworm+ca-certificates+git+nodejs+npm",
		"python-data/preset/debian:bookworm+ca-certificates+git+python-is-python3+python3+python3-matplotlib+python3-numpy+python3-pandas+python3-pip",
		"e2b-base/preset/debian:bookworm+ca-certificates+curl+git+python-is-python3+python3+python3-pip+python3-requests+sudo",
		"alpha/custom/oci-layout:/srv/alpha:v1", "mid/custom/docker-archive:/srv/mid.tar", "zeta/custom/example.com/z:1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Catalog() =\n%v\nwant\n%v", got, want)
	}
}

func TestNewStoreRejectsBadCustomImages(t *testing.T) {
	tests := []struct {
		custom map[string]string
		want   string
	}{
		{map[string]string{"python": "example.com/evil/python:latest"}, `custom_images key "python" shadows the preset`},
		{map[string]string{"bad": "UPPER/Case:tag"}, "custom_images.bad"},
		{map[string]string{"rel": "oci-layout:relative/dir"}, "custom_images.rel"},
		{map[string]string{"rel": "docker-archive:img.tar"}, "absolute path"},
		{map[string]string{"notag": "oci-layout:/srv/x:"}, "empty tag"},
	}
	for _, tt := range tests {
		_, err := NewStore(Options{CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CustomImages: tt.custom})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewStore(%v) = %v, want an error containing %q", tt.custom, err, tt.want)
		}
	}
}

func TestEnsureCustomWithoutInstall(t *testing.T) {
	s := newCustomStore(t, t.TempDir(), map[string]string{"app": "127.0.0.1:1/never/pulled:1"})
	_, err := s.Ensure(t.Context(), "app", false)
	if !errdefs.Is(err, errdefs.CodeImageMissing) || !strings.Contains(err.Error(), "hutch image pull app") {
		t.Fatalf("err = %v, want S101 naming `hutch image pull app`", err)
	}
	if e := errdefs.As(err); e.Fix["command"] != "hutch image pull app" {
		t.Errorf("fix = %v", e.Fix)
	}
}

func TestPullMovedTagAndRemove(t *testing.T) {
	noDockerConfig(t)
	reg := ocitest.NewRegistry(t, "", "")
	v1img := ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("version", "1", 0o644)))
	v2img := ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("version", "2", 0o644)))
	ref := reg.Push(t, "app/moving:latest", v1img)
	dir := t.TempDir()
	s := newCustomStore(t, dir, map[string]string{"app": ref, "same": ref})

	first, err := s.Ensure(t.Context(), "app", true)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, "app/moving:latest", v2img)
	// Ensure keeps what is cached; Pull resolves the tag again.
	if again, err := s.Ensure(t.Context(), "app", true); err != nil || again.ID != first.ID {
		t.Fatalf("Ensure after the tag moved = %v, %v; want the cached %s", again, err, first.ID)
	}
	pulled, err := s.Pull(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if pulled.ID != digestOf(t, v2img).Hex || describe(t, pulled.Rootfs, "version") != "file:2" {
		t.Fatalf("Pull = %+v, want the moved tag's image", pulled)
	}
	if got, ok := s.Lookup("app"); !ok || got.ID != pulled.ID {
		t.Errorf("Lookup after Pull = %+v, %v", got, ok)
	}

	// "same" shares the reference, so the image: Remove takes both.
	if _, err := s.Ensure(t.Context(), "same", true); err != nil {
		t.Fatal(err)
	}
	// A guard that finds the image in use stops the removal.
	var guarded string
	busy := errdefs.Malformed("in use")
	if _, err := s.Remove(t.Context(), "app", func(id string) error { guarded = id; return busy }); err != busy || guarded != pulled.ID {
		t.Fatalf("Remove with a refusing guard = %v (guard saw %q), want the guard's error", err, guarded)
	}
	if _, ok := s.Lookup("app"); !ok {
		t.Fatal("a refused Remove removed the image")
	}
	removed, err := s.Remove(t.Context(), "app", func(string) error { return nil })
	if err != nil || !removed {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	for _, n := range []string{"app", "same"} {
		if _, ok := s.Lookup(n); ok {
			t.Errorf("%s still cached after Remove", n)
		}
		if st := s.Status(n); st.State != StateMissing {
			t.Errorf("Status(%s) = %+v", n, st)
		}
	}
	images, tmp, _ := cacheEntries(t, dir)
	if slices.Contains(images, pulled.ID) || len(tmp) != 0 {
		t.Errorf("after Remove: images %v, tmp %v", images, tmp)
	}
	if removed, err := s.Remove(t.Context(), "app", nil); err != nil || removed {
		t.Errorf("second Remove = %v, %v; want nothing to do", removed, err)
	}
	if _, err := s.Remove(t.Context(), "nope", nil); !errdefs.Is(err, errdefs.CodeImageNotAllowed) {
		t.Errorf("Remove(unknown) = %v, want S100", err)
	}
	// Gone from the cache, pulled again on demand.
	if _, err := s.Ensure(t.Context(), "app", false); !errdefs.Is(err, errdefs.CodeImageMissing) {
		t.Errorf("Ensure(install=false) after Remove = %v, want S101", err)
	}
	if got, err := s.Ensure(t.Context(), "app", true); err != nil || got.ID != pulled.ID {
		t.Errorf("Ensure after Remove = %+v, %v", got, err)
	}
}

func TestRemoveDuringPull(t *testing.T) {
	dir := t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	s := newTestStore(t, dir, blockingBuilder(started, release))
	done := make(chan error, 1)
	go func() {
		_, err := s.Ensure(t.Context(), "python", true)
		done <- err
	}()
	<-started
	if _, err := s.Remove(t.Context(), "python", nil); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("Remove during the build = %v, want S001", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Remove(t.Context(), "python", nil); err != nil || !removed {
		t.Errorf("Remove after the build = %v, %v", removed, err)
	}
}
