package bench

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeEngine is a Docker Engine API (the calls the baselines make) on a
// unix socket. Docker is never a test dependency; this checks that the
// client speaks the protocol: JSON bodies, the import's tar stream and
// progress messages, the multiplexed exec stream and the archives.
type fakeEngine struct {
	sock string

	// mu guards the fields below.
	mu       sync.Mutex
	imported map[string]bool // repo:tag → imported
	files    []string        // names in the last imported archive
	live     map[string]bool // running containers
	archive  []byte          // the last archive put
	exitCode int
}

func newFakeEngine(t *testing.T) *fakeEngine {
	f := &fakeEngine{sock: filepath.Join(t.TempDir(), "docker.sock"), imported: map[string]bool{}, live: map[string]bool{}}
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]string{"Version": "20.10.24", "ApiVersion": "1.41"})
	})
	mux.HandleFunc("GET /images/{ref...}", func(w http.ResponseWriter, r *http.Request) {
		ref := strings.TrimSuffix(r.PathValue("ref"), "/json")
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.imported[ref] {
			w.WriteHeader(http.StatusNotFound)
			reply(w, map[string]string{"message": "No such image: " + ref})
			return
		}
		reply(w, map[string]string{"Id": "sha256:x"})
	})
	mux.HandleFunc("POST /images/create", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("fromSrc") != "-" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		tr := tar.NewReader(r.Body)
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				reply(w, map[string]string{"error": "bad archive: " + err.Error()})
				return
			}
			names = append(names, h.Name+"|"+string(h.Typeflag)+"|"+h.Linkname)
		}
		f.mu.Lock()
		f.imported[q.Get("repo")+":"+q.Get("tag")], f.files = true, names
		f.mu.Unlock()
		reply(w, map[string]string{"status": "sha256:abc"})
	})
	mux.HandleFunc("POST /containers/create", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Image      string
			HostConfig struct{ NetworkMode string }
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.HostConfig.NetworkMode != "none" {
			w.WriteHeader(http.StatusBadRequest)
			reply(w, map[string]string{"message": "want no network"})
			return
		}
		w.WriteHeader(http.StatusCreated)
		reply(w, map[string]string{"Id": "c1"})
	})
	mux.HandleFunc("POST /containers/{id}/start", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.live[r.PathValue("id")] = true
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /containers/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		delete(f.live, r.PathValue("id"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /containers/{id}/exec", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		reply(w, map[string]string{"Id": "e1"})
	})
	mux.HandleFunc("POST /exec/{id}/start", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
		frame := func(stream byte, s string) {
			hdr := [8]byte{stream}
			binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
			_, _ = w.Write(append(hdr[:], s...))
		}
		frame(1, "hello ")
		frame(2, "warning\n")
		frame(1, "world\n")
	})
	mux.HandleFunc("GET /exec/{id}/json", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, map[string]any{"Running": false, "ExitCode": f.exitCode})
	})
	mux.HandleFunc("PUT /containers/{id}/archive", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.archive = b
		f.mu.Unlock()
	})
	mux.HandleFunc("GET /containers/{id}/archive", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, _ = w.Write(f.archive)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func TestDockerClient(t *testing.T) {
	f := newFakeEngine(t)
	d := newDockerClient(f.sock)
	defer d.close()
	ctx := t.Context()

	if v, err := d.version(ctx); err != nil || v != "Docker Engine 20.10.24 (API 1.41)" {
		t.Fatalf("version = %q, %v", v, err)
	}

	// Import: a tree with a hard link and a symlink.
	root := t.TempDir()
	for name, body := range map[string]string{"bin/true": "#!", "etc/hostname": "x"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "bin/true"), filepath.Join(root, "bin/false")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin", filepath.Join(root, "sbin")); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.imageExists(ctx, "hutch-bench/python:abc"); ok || err != nil {
		t.Fatalf("imageExists before import = %v, %v", ok, err)
	}
	if err := d.importRootfs(ctx, root, "hutch-bench/python", "abc"); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.imageExists(ctx, "hutch-bench/python:abc"); !ok || err != nil {
		t.Fatalf("imageExists after import = %v, %v", ok, err)
	}
	want := []string{"bin/|5|", "bin/false|0|", "bin/true|1|bin/false", "etc/|5|", "etc/hostname|0|", "sbin|2|bin"}
	if !slices.Equal(f.files, want) {
		t.Errorf("imported archive = %q, want %q", f.files, want)
	}

	// Containers: create (no network), start, exec, archive, remove.
	id, err := d.create(ctx, containerSpec{Image: "hutch-bench/python:abc", Cmd: []string{"sleep", "infinity"}, CPUs: 1, MemoryMB: 512})
	if err != nil || id != "c1" {
		t.Fatalf("create = %q, %v", id, err)
	}
	if err := d.start(ctx, id); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code, err := d.exec(ctx, id, "echo", "hello", "world")
	if err != nil || string(stdout) != "hello world\n" || string(stderr) != "warning\n" || code != 0 {
		t.Fatalf("exec = %q, %q, %d, %v", stdout, stderr, code, err)
	}
	f.mu.Lock()
	f.exitCode = 3
	f.mu.Unlock()
	if _, _, code, err := d.exec(ctx, id, "false"); err != nil || code != 3 {
		t.Fatalf("exec of a failing command = %d, %v", code, err)
	}
	var archive bytes.Buffer
	if err := tarOne(&archive, "f", 5, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	if err := d.putArchive(ctx, id, "/tmp", &archive); err != nil {
		t.Fatal(err)
	}
	rc, err := d.getArchive(ctx, id, "/tmp/f")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := untarOne(rc, &got); err != nil || got.String() != "hello" {
		t.Fatalf("archive round trip = %q, %v", got.String(), err)
	}
	rc.Close()
	if err := d.remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if len(f.live) != 0 {
		t.Errorf("containers left: %v", f.live)
	}

	// Errors carry Docker's message.
	err = d.do(ctx, http.MethodGet, "/images/missing/json", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "404 Not Found: No such image: missing") {
		t.Fatalf("error of a missing image = %v", err)
	}
}

func TestDemux(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		hdr := [8]byte{stream}
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
		return append(hdr[:], s...)
	}
	tests := []struct {
		name             string
		in               []byte
		wantOut, wantErr string
		wantFail         bool
	}{
		{name: "empty", in: nil},
		{name: "both streams", in: slices.Concat(frame(1, "a"), frame(2, "b"), frame(1, "c")), wantOut: "ac", wantErr: "b"},
		{name: "stdin echo dropped", in: slices.Concat(frame(0, "in"), frame(1, "out")), wantOut: "out"},
		{name: "cut header", in: frame(1, "abc")[:5], wantFail: true},
		{name: "cut payload", in: frame(1, "abc")[:10], wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := demux(bytes.NewReader(tt.in), &out, &errb)
			if (err != nil) != tt.wantFail {
				t.Fatalf("demux = %v, want failure %v", err, tt.wantFail)
			}
			if !tt.wantFail && (out.String() != tt.wantOut || errb.String() != tt.wantErr) {
				t.Errorf("demux = %q, %q; want %q, %q", out.String(), errb.String(), tt.wantOut, tt.wantErr)
			}
		})
	}
}
