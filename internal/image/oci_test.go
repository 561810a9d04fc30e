package image

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

// The tests below pull images they build from busybox out of
// go-containerregistry's in-process registry (a real registry speaking the
// distribution API over HTTP on 127.0.0.1), or from files.

// newCustomStore opens a store on cache dir with custom images (name → ref).
func newCustomStore(t *testing.T, dir string, custom map[string]string) *Store {
	t.Helper()
	s, err := NewStore(Options{
		CacheDir:     dir,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Suite:        "bookworm",
		Mirror:       "http://mirror.invalid/debian",
		CustomImages: custom,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noDockerConfig points the Docker config at an empty directory, so the
// host's credentials play no part.
func noDockerConfig(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
}

// busyboxImage is a two-layer image: busybox, then a layer that deletes,
// hides and adds, with an image config.
func busyboxImage(t *testing.T, marker string) v1.Image {
	t.Helper()
	upper := ocitest.Layer(t,
		ocitest.Whiteout("bin", "rm"),
		ocitest.Dir("srv", 0o755), ocitest.Opaque("srv"), ocitest.Reg("srv/marker", marker, 0o644),
		ocitest.Hardlink("bin/cat2", "bin/busybox"),
	)
	return ocitest.Image(t, ocitest.Config{Env: []string{"GREETING=hello", "PATH=/bin"}, WorkingDir: "/srv/work", User: "app"},
		ocitest.Layer(t, ocitest.BusyboxFiles(t)...), upper)
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// cacheEntries lists what dir's images/, tmp/ and refs/ hold.
func cacheEntries(t *testing.T, dir string) (images, tmp, refs []string) {
	t.Helper()
	list := func(sub string) []string {
		es, _ := os.ReadDir(filepath.Join(dir, sub))
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	return list("images"), list("tmp"), list("refs")
}

func TestPullFromRegistry(t *testing.T) {
	noDockerConfig(t)
	reg := ocitest.NewRegistry(t, "", "")
	img := busyboxImage(t, "v1")
	ref := reg.Push(t, "tools/busybox:1", img)
	dir := t.TempDir()
	s := newCustomStore(t, dir, map[string]string{"bb": ref})

	got, err := s.Ensure(t.Context(), "bb", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, img).Hex; got.ID != want || got.Kind != KindCustom || got.Ref != ref || got.Name != "bb" {
		t.Errorf("image = %+v, want id %s", got, want)
	}
	wantCfg := Config{Env: []string{"GREETING=hello", "PATH=/bin"}, WorkingDir: "/srv/work", User: "app"}
	if !slices.Equal(got.Config.Env, wantCfg.Env) || got.Config.WorkingDir != wantCfg.WorkingDir || got.Config.User != wantCfg.User {
		t.Errorf("config = %+v, want %+v", got.Config, wantCfg)
	}
	for p, want := range map[string]string{
		"bin/sh": "link:busybox", "bin/rm": "missing", "srv/marker": "file:v1", "srv/work": "dir",
		".hutch/hutch-agent": "file:", "etc/passwd": "file:root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n",
	} {
		if d := describe(t, got.Rootfs, p); d != want {
			t.Errorf("%s = %.60s, want %.60s", p, d, want)
		}
	}
	if n := linkCount(t, filepath.Join(got.Rootfs, "bin/cat2")); n != 2 {
		t.Errorf("bin/cat2 has %d links, want 2 (a hard link of bin/busybox)", n)
	}
	if st := s.Status("bb"); st.State != StateReady || st.ID != got.ID || st.SizeBytes < 1<<20 {
		t.Errorf("Status = %+v", st)
	}

	// A new store (a restart) finds it with the registry gone.
	reg.Close()
	again := newCustomStore(t, dir, map[string]string{"bb": ref})
	cached, ok := again.Lookup("bb")
	if !ok || cached.ID != got.ID || cached.Config.User != "app" {
		t.Errorf("Lookup after restart = %+v, %v", cached, ok)
	}
	if _, err := again.Ensure(t.Context(), "bb", false); err != nil {
		t.Errorf("Ensure(install=false) of a pulled image: %v", err)
	}
}

func TestPullPlatforms(t *testing.T) {
	noDockerConfig(t)
	reg := ocitest.NewRegistry(t, "", "")
	host := ocitest.HostPlatform()
	other := func(arch string) *v1.Platform { return &v1.Platform{OS: "linux", Architecture: arch} }
	if host.Architecture == "s390x" {
		t.Skip("the test's foreign platforms include the host's")
	}
	marked := func(marker string, p *v1.Platform) v1.Image {
		return ocitest.Image(t, ocitest.Config{Platform: p}, ocitest.Layer(t, ocitest.Reg("marker", marker, 0o644)))
	}
	tests := []struct {
		name    string
		push    func(repo string) string
		marker  string // of the image chosen; "" when none fits
		wantMsg []string
	}{
		{name: "index with the host's platform", marker: "host",
			push: func(repo string) string {
				return reg.PushIndex(t, repo, ocitest.Index(t, marked("s390x", other("s390x")), marked("host", nil), marked("riscv", other("riscv64"))))
			}},
		{name: "index without it",
			push: func(repo string) string {
				return reg.PushIndex(t, repo, ocitest.Index(t, marked("s390x", other("s390x")), marked("riscv", other("riscv64"))))
			},
			wantMsg: []string{"no " + platformString(host) + " manifest", "linux/riscv64, linux/s390x"}},
		{name: "single image of another platform",
			push:    func(repo string) string { return reg.Push(t, repo, marked("s390x", other("s390x"))) },
			wantMsg: []string{"no " + platformString(host) + " manifest", "it has: linux/s390x"}},
		{name: "single image without a platform", marker: "plain",
			push: func(repo string) string { return reg.Push(t, repo, marked("plain", &v1.Platform{})) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := tt.push("multi/case" + string(rune('a'+i)) + ":latest")
			dir := t.TempDir()
			s := newCustomStore(t, dir, map[string]string{"m": ref})
			img, err := s.Ensure(t.Context(), "m", true)
			if tt.marker != "" {
				if err != nil {
					t.Fatal(err)
				}
				if d := describe(t, img.Rootfs, "marker"); d != "file:"+tt.marker {
					t.Errorf("chose the image with marker %s, want %s", d, tt.marker)
				}
				return
			}
			if !errdefs.Is(err, errdefs.CodeImagePull) {
				t.Fatalf("err = %v, want S102", err)
			}
			e := errdefs.As(err)
			for _, w := range tt.wantMsg {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
			if !strings.Contains(e.FixNote, "this host is "+platformString(host)) {
				t.Errorf("fix note %q does not name the host platform", e.FixNote)
			}
			if imgs, tmp, refs := cacheEntries(t, dir); len(imgs)+len(tmp)+len(refs) != 0 {
				t.Errorf("cache holds images %v, tmp %v, refs %v after a failed pull", imgs, tmp, refs)
			}
		})
	}
}

func TestPullWithBasicAuth(t *testing.T) {
	reg := ocitest.NewRegistry(t, "alice", "s3cret")
	img := ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("hello", "world", 0o644)))
	ref := reg.Push(t, "private/app:1", img)

	t.Run("without credentials", func(t *testing.T) {
		noDockerConfig(t)
		s := newCustomStore(t, t.TempDir(), map[string]string{"app": ref})
		_, err := s.Ensure(t.Context(), "app", true)
		if !errdefs.Is(err, errdefs.CodeImagePull) || !strings.Contains(err.Error(), "Docker config file") {
			t.Fatalf("err = %v, want S102 pointing at the Docker config", err)
		}
	})
	t.Run("with the wrong password", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", ocitest.DockerConfig(t, reg.Host, "alice", "wrong"))
		s := newCustomStore(t, t.TempDir(), map[string]string{"app": ref})
		if _, err := s.Ensure(t.Context(), "app", true); !errdefs.Is(err, errdefs.CodeImagePull) {
			t.Fatalf("err = %v, want S102", err)
		}
	})
	t.Run("with the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", ocitest.DockerConfig(t, reg.Host, "alice", "s3cret"))
		s := newCustomStore(t, t.TempDir(), map[string]string{"app": ref})
		got, err := s.Ensure(t.Context(), "app", true)
		if err != nil {
			t.Fatal(err)
		}
		if d := describe(t, got.Rootfs, "hello"); d != "file:world" {
			t.Errorf("hello = %s", d)
		}
	})
}

func TestPullCorruptBlob(t *testing.T) {
	noDockerConfig(t)
	base := ocitest.Layer(t, ocitest.Reg("a", strings.Repeat("a", 100_000), 0o644))
	top := ocitest.Layer(t, ocitest.Reg("b", strings.Repeat("b", 100_000), 0o644))
	img := ocitest.Image(t, ocitest.Config{}, base, top)
	cfgName, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	topDigest, err := top.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		blob v1.Hash
	}{{"second layer", topDigest}, {"config", cfgName}} {
		t.Run(tt.name, func(t *testing.T) {
			reg := ocitest.NewRegistry(t, "", "")
			ref := reg.Push(t, "bad/img:1", img)
			reg.Corrupt(tt.blob)
			dir := t.TempDir()
			s := newCustomStore(t, dir, map[string]string{"bad": ref})
			_, err := s.Ensure(t.Context(), "bad", true)
			if !errdefs.Is(err, errdefs.CodeImagePull) || !errdefs.CodeOf(err).Retryable() {
				t.Fatalf("err = %v, want S102 (retryable)", err)
			}
			if imgs, tmp, refs := cacheEntries(t, dir); len(imgs)+len(tmp)+len(refs) != 0 {
				t.Errorf("cache holds images %v, tmp %v, refs %v after a corrupt pull", imgs, tmp, refs)
			}
			if _, ok := s.Lookup("bad"); ok {
				t.Error("the corrupt image is cached")
			}
		})
	}
}

func TestConcurrentEnsurePullsOnce(t *testing.T) {
	noDockerConfig(t)
	reg := ocitest.NewRegistry(t, "", "")
	layer := ocitest.Layer(t, ocitest.BusyboxFiles(t)...)
	img := ocitest.Image(t, ocitest.Config{}, layer)
	ref := reg.Push(t, "shared/bb:1", img)
	ld, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	pushed := reg.BlobGets(ld)
	dir := t.TempDir()
	// Two stores on one cache: two daemons, or a restart racing a pull.
	stores := []*Store{newCustomStore(t, dir, map[string]string{"bb": ref}), newCustomStore(t, dir, map[string]string{"alias": ref})}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			s, n := stores[i%2], []string{"bb", "alias"}[i%2]
			img, err := s.Ensure(t.Context(), n, true)
			errs[i] = err
			if err == nil {
				ids[i] = img.ID
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || ids[i] != digestOf(t, img).Hex {
			t.Errorf("Ensure %d: id %s, err %v", i, ids[i], err)
		}
	}
	if n := reg.BlobGets(ld) - pushed; n != 1 {
		t.Errorf("the layer was downloaded %d times, want once", n)
	}
}

func TestPullFromFiles(t *testing.T) {
	img := ocitest.Image(t, ocitest.Config{WorkingDir: "app"}, ocitest.Layer(t, ocitest.Reg("from", "files", 0o644)))
	other := ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("from", "other", 0o644)))
	dir := t.TempDir()

	lp := filepath.Join(dir, "layout")
	p, err := layout.Write(lp, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for tag, im := range map[string]v1.Image{"v1": img, "v2": other} {
		if err := p.AppendImage(im, layout.WithAnnotations(map[string]string{annotationRefName: tag})); err != nil {
			t.Fatal(err)
		}
	}
	single := filepath.Join(dir, "single")
	sp, err := layout.Write(single, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "img.tar")
	tag, err := name.NewTag("example.com/app:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		ref, want, wantErr string
	}{
		{ref: prefixOCILayout + lp + ":v1", want: "files"},
		{ref: prefixOCILayout + lp + ":v2", want: "other"},
		{ref: prefixOCILayout + single, want: "files"},
		{ref: prefixDockerArchive + archive, want: "files"},
		{ref: prefixOCILayout + lp, wantErr: "name one with"},
		{ref: prefixOCILayout + lp + ":v3", wantErr: `no image tagged "v3"`},
		{ref: prefixDockerArchive + filepath.Join(dir, "missing.tar"), wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s := newCustomStore(t, t.TempDir(), map[string]string{"f": tt.ref})
			got, err := s.Ensure(t.Context(), "f", true)
			if tt.wantErr != "" {
				if !errdefs.Is(err, errdefs.CodeImagePull) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want S102 containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(t, got.Rootfs, "from"); d != "file:"+tt.want {
				t.Errorf("from = %s, want %s", d, tt.want)
			}
			if tt.want == "files" && (got.Config.WorkingDir != "/app" || describe(t, got.Rootfs, "app") != "dir") {
				t.Errorf("working dir %q not made absolute and created", got.Config.WorkingDir)
			}
		})
	}

	t.Run("corrupt layout blob", func(t *testing.T) {
		// An OCI layout's blobs are verified against the config's diff_ids.
		bad := filepath.Join(t.TempDir(), "layout")
		bp, err := layout.Write(bad, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := bp.AppendImage(img); err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		d, err := layers[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(bad, "blobs", d.Algorithm, d.Hex)
		// A valid gzip of a tampered tar.
		tampered := ocitest.Layer(t, ocitest.Reg("from", "FILES", 0o644))
		rc, err := tampered.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cache := t.TempDir()
		s := newCustomStore(t, cache, map[string]string{"f": prefixOCILayout + bad})
		_, err = s.Ensure(t.Context(), "f", true)
		if !errdefs.Is(err, errdefs.CodeImagePull) || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("err = %v, want S102 saying the layer is corrupt", err)
		}
		if imgs, tmp, refs := cacheEntries(t, cache); len(imgs)+len(tmp)+len(refs) != 0 {
			t.Errorf("cache holds images %v, tmp %v, refs %v after a corrupt pull", imgs, tmp, refs)
		}
	})
}
