// Package ocitest builds small OCI images and serves them from
// go-containerregistry's in-process registry, for tests of image pulls:
// the unit tests of package image and the integration tests that start a
// real daemon. Images are made from the host's busybox-static binary
// (Debian package busybox-static), with fixed timestamps so that the same
// content always has the same digest.
package ocitest

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Epoch is the timestamp of every entry of the layers built here.
var Epoch = time.Unix(1_700_000_000, 0).UTC()

// BusyboxPath is the static busybox the images are made of.
const BusyboxPath = "/bin/busybox"

// File is one entry of a layer.
type File struct {
	Name     string
	Type     byte // tar.TypeReg when zero
	Body     string
	Linkname string
	Mode     int64 // 0644 for files, 0755 for directories when zero
	UID, GID int
}

// Dir is a directory entry.
func Dir(name string, mode int64) File { return File{Name: name, Type: tar.TypeDir, Mode: mode} }

// Reg is a regular file entry.
func Reg(name, body string, mode int64) File { return File{Name: name, Body: body, Mode: mode} }

// Symlink is a symbolic link entry.
func Symlink(name, target string) File {
	return File{Name: name, Type: tar.TypeSymlink, Linkname: target, Mode: 0o777}
}

// Hardlink is a hard link entry to target, a path from the root.
func Hardlink(name, target string) File {
	return File{Name: name, Type: tar.TypeLink, Linkname: target}
}

// Whiteout deletes victim of directory dir in the layers below.
func Whiteout(dir, victim string) File { return Reg(path.Join(dir, ".wh."+victim), "", 0o644) }

// Opaque hides what the layers below have in directory dir.
func Opaque(dir string) File { return Reg(path.Join(dir, ".wh..wh..opq"), "", 0o644) }

// Owned gives f an owner.
func Owned(f File, uid, gid int) File {
	f.UID, f.GID = uid, gid
	return f
}

// Tar is files as an uncompressed tar stream.
func Tar(t testing.TB, files ...File) []byte {
	t.Helper()
	return tarOf(t, files)
}

// Layer is files as a gzip-compressed layer.
func Layer(t testing.TB, files ...File) v1.Layer {
	t.Helper()
	return layerOf(t, tarOf(t, files))
}

// tarOf writes files as an uncompressed tar stream.
func tarOf(t testing.TB, files []File) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		typ := f.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
			if typ == tar.TypeDir {
				mode = 0o755
			}
		}
		hdr := &tar.Header{
			Name: f.Name, Typeflag: typ, Linkname: f.Linkname, Mode: mode,
			Uid: f.UID, Gid: f.GID, ModTime: Epoch, Format: tar.FormatPAX,
		}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(f.Body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("writing tar header %s: %v", f.Name, err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, f.Body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerOf makes a gzip-compressed layer of an uncompressed tar stream.
func layerOf(t testing.TB, stream []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(stream)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Applets are the busybox commands BusyboxFiles links into /bin.
var Applets = []string{"sh", "cat", "echo", "env", "id", "ls", "pwd", "sleep", "true", "false", "test",
	"mkdir", "rm", "touch", "stat", "readlink", "printf", "grep", "wc", "head", "whoami", "chmod"}

// BusyboxFiles is a minimal root filesystem: busybox with its applets in
// /bin, an /etc/passwd with root and app (1000:1000), an /etc/group where
// app is also in extra (2000) and both are in wheel (10), and app's home.
func BusyboxFiles(t testing.TB) []File {
	t.Helper()
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Skipf("busybox-static is needed to build test images (apt-get install busybox-static): %v", err)
	}
	files := []File{
		Dir("bin", 0o755), Reg("bin/busybox", string(bb), 0o755),
		Dir("etc", 0o755),
		Reg("etc/passwd", "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n", 0o644),
		Reg("etc/group", "root:x:0:\nwheel:x:10:root,app\napp:x:1000:\nextra:x:2000:app\n", 0o644),
		Dir("root", 0o700), Dir("home", 0o755), Owned(Dir("home/app", 0o755), 1000, 1000),
		Dir("tmp", 0o1777), Dir("proc", 0o555), Dir("sys", 0o555), Dir("dev", 0o755),
	}
	for _, a := range Applets {
		files = append(files, Symlink("bin/"+a, "busybox"))
	}
	return files
}

// Config is the image configuration Image sets.
type Config struct {
	Env        []string
	WorkingDir string
	User       string
	// Platform defaults to linux/<host arch>.
	Platform *v1.Platform
}

// HostPlatform is linux/<the arch of this test binary>.
func HostPlatform() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

// Image builds an image of layers with cfg.
func Image(t testing.TB, cfg Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	p := HostPlatform()
	if cfg.Platform != nil {
		p = *cfg.Platform
	}
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Env, cf.Config.WorkingDir, cf.Config.User = cfg.Env, cfg.WorkingDir, cfg.User
	cf.Created = v1.Time{Time: Epoch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// Index builds a multi-platform index of imgs, each under its config's platform.
func Index(t testing.TB, imgs ...v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// Registry is an in-process registry on 127.0.0.1 (plain HTTP).
type Registry struct {
	// Host is "127.0.0.1:PORT".
	Host string
	user string
	pass string
	srv  *httptest.Server

	// mu guards the fields below.
	mu       sync.Mutex
	corrupt  map[string]bool // blob digests served with a flipped byte
	blobGets map[string]int  // GETs per blob digest
}

// NewRegistry serves a fresh registry until the test ends. With user set,
// every request needs HTTP basic auth with user and pass.
func NewRegistry(t testing.TB, user, pass string) *Registry {
	t.Helper()
	r := &Registry{user: user, pass: pass, corrupt: map[string]bool{}, blobGets: map[string]int{}}
	r.srv = httptest.NewServer(r.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// Close stops serving: pulls from now on fail to connect.
func (r *Registry) Close() { r.srv.Close() }

// wrap adds basic auth, blob counting and corruption to the registry.
func (r *Registry) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		digest := ""
		if i := strings.LastIndex(req.URL.Path, "/blobs/"); i >= 0 && req.Method == http.MethodGet {
			digest = req.URL.Path[i+len("/blobs/"):]
		}
		r.mu.Lock()
		if digest != "" {
			r.blobGets[digest]++
		}
		corrupt := r.corrupt[digest]
		r.mu.Unlock()
		if !corrupt {
			h.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if len(body) > 0 {
			body[len(body)/2] ^= 0xff
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

// Corrupt makes the registry serve blob digest with one byte flipped.
func (r *Registry) Corrupt(digest v1.Hash) {
	r.mu.Lock()
	r.corrupt[digest.String()] = true
	r.mu.Unlock()
}

// BlobGets is how many times blob digest was downloaded.
func (r *Registry) BlobGets(digest v1.Hash) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobGets[digest.String()]
}

// Ref is "HOST/repo".
func (r *Registry) Ref(repo string) string { return r.Host + "/" + repo }

func (r *Registry) options() []remote.Option {
	if r.user == "" {
		return nil
	}
	return []remote.Option{remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})}
}

// Push uploads img as repo (a "name:tag" under this registry) and returns
// its full reference.
func (r *Registry) Push(t testing.TB, repo string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.Ref(repo))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.options()...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref.String()
}

// PushIndex uploads idx as repo and returns its full reference.
func (r *Registry) PushIndex(t testing.TB, repo string, idx v1.ImageIndex) string {
	t.Helper()
	ref, err := name.ParseReference(r.Ref(repo))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, r.options()...); err != nil {
		t.Fatalf("pushing index %s: %v", ref, err)
	}
	return ref.String()
}

// DockerConfig writes a Docker config.json with credentials for host into
// a new directory and returns it, for DOCKER_CONFIG.
func DockerConfig(t testing.TB, host, user, pass string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
