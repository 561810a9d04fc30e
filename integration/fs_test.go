package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fsStep is one call of a sandbox::fs function and what it must give.
type fsStep struct {
	name    string
	op      string         // sandbox::fs::<op>
	payload map[string]any // sandbox_id is added
	code    string         // the error's S-code, "" for success
	check   func(t *testing.T, res map[string]any)
}

// fsFn is the function sandbox::fs::<op>.
func fsFn(op string) string {
	for _, fn := range api.FsFns {
		if api.FnOp(fn) == op {
			return fn
		}
	}
	return "no such op " + op
}

// runFsSteps runs steps in order on sandbox id through the generic function
// route, each a subtest.
func runFsSteps(t *testing.T, d *daemon, id string, steps []fsStep) {
	t.Helper()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			payload := map[string]any{"sandbox_id": id}
			for k, v := range st.payload {
				payload[k] = v
			}
			var res map[string]any
			err := d.c.Call(context.Background(), fsFn(st.op), payload, &res)
			if st.code != "" {
				env := wantCode(t, err, st.code)
				if env.Retryable != (st.code == "S218") {
					t.Errorf("%s retryable = %v", st.code, env.Retryable)
				}
				if p, ok := st.payload["path"].(string); ok && strings.HasPrefix(st.code, "S21") && !strings.Contains(env.Message, p) {
					t.Errorf("message %q does not name the path %s", env.Message, p)
				}
			} else if err != nil {
				t.Fatalf("%s: %v", st.op, err)
			}
			if st.check != nil {
				st.check(t, res)
			}
		})
	}
}

// field asserts res[key] == want (compared as JSON).
func field(key string, want any) func(*testing.T, map[string]any) {
	return func(t *testing.T, res map[string]any) {
		t.Helper()
		got, _ := json.Marshal(res[key])
		w, _ := json.Marshal(want)
		if !bytes.Equal(got, w) {
			t.Errorf("%s = %s, want %s (result %v)", key, got, w, res)
		}
	}
}

// TestFsOperations runs every sandbox::fs operation against a real
// sandbox of each runtime: its success path and each of its error codes,
// and a streamed upload and download.
func TestFsOperations(t *testing.T) {
	d := startTestedRuntimesDaemon(t, "")
	eachRuntime(t, d, func(t *testing.T, rt string) {
		runFsOperations(t, d, d.create(api.CreateRequest{Image: "bb", Runtime: rt}))
	})
}

// runFsOperations is TestFsOperations in sandbox id.
func runFsOperations(t *testing.T, d *daemon, id string) {
	steps := []fsStep{
		// mkdir
		{name: "mkdir parents", op: "mkdir", payload: map[string]any{"path": "/work/src", "parents": true}, check: field("created", true)},
		{name: "mkdir exists", op: "mkdir", payload: map[string]any{"path": "/work/src"}, code: "S213"},
		{name: "mkdir exists with parents", op: "mkdir", payload: map[string]any{"path": "/work/src", "parents": true}, check: field("created", false)},
		{name: "mkdir missing parent", op: "mkdir", payload: map[string]any{"path": "/no/such"}, code: "S211"},
		{name: "mkdir mode", op: "mkdir", payload: map[string]any{"path": "/work/private", "mode": "0700"}, check: field("created", true)},
		{name: "mkdir bad mode", op: "mkdir", payload: map[string]any{"path": "/work/x", "mode": "0999"}, code: "S210"},
		{name: "mkdir read-only fs", op: "mkdir", payload: map[string]any{"path": "/sys/hutch"}, code: "S215"},
		// write
		{name: "write", op: "write", payload: map[string]any{"path": "/work/src/main.py", "content": "print('hello')\nprint('world')\n"},
			check: field("bytes_written", 30)},
		{name: "write b64", op: "write", payload: map[string]any{"path": "/work/bin.dat", "content_b64": "/wD+", "mode": 600}, check: field("path", "/work/bin.dat")},
		{name: "write empty", op: "write", payload: map[string]any{"path": "/work/empty", "content": ""}, check: field("bytes_written", 0)},
		{name: "write missing parent", op: "write", payload: map[string]any{"path": "/work/a/b/c.txt", "content": "x"}, code: "S211",
			check: func(t *testing.T, _ map[string]any) {
				var res map[string]any
				err := d.c.Call(context.Background(), api.FnFsWrite, map[string]any{"sandbox_id": id, "path": "/work/a/b/c.txt", "content": "x"}, &res)
				if env := wantCode(t, err, "S211"); env.Fix["parents"] != true {
					t.Errorf("fix = %v, want parents: true", env.Fix)
				}
			}},
		{name: "write parents", op: "write", payload: map[string]any{"path": "/work/a/b/c.txt", "content": "x", "parents": true}, check: field("bytes_written", 1)},
		{name: "write both bodies", op: "write", payload: map[string]any{"path": "/work/x", "content": "a", "content_b64": "YQ=="}, code: "S001"},
		{name: "write no body", op: "write", payload: map[string]any{"path": "/work/x"}, code: "S001"},
		{name: "write bad base64", op: "write", payload: map[string]any{"path": "/work/x", "content_b64": "!!"}, code: "S001"},
		{name: "write relative", op: "write", payload: map[string]any{"path": "work/x", "content": "a"}, code: "S210"},
		{name: "write directory", op: "write", payload: map[string]any{"path": "/work/src", "content": "a"}, code: "S212"},
		{name: "write read-only fs", op: "write", payload: map[string]any{"path": "/sys/hutch", "content": "a"}, code: "S215"},
		// ls, stat
		{name: "ls", op: "ls", payload: map[string]any{"path": "/work"}, check: func(t *testing.T, res map[string]any) {
			var names []string
			for _, e := range res["entries"].([]any) {
				names = append(names, e.(map[string]any)["name"].(string))
			}
			if strings.Join(names, ",") != "a,bin.dat,empty,private,src" {
				t.Errorf("ls /work: %v", names)
			}
		}},
		{name: "ls file", op: "ls", payload: map[string]any{"path": "/work/empty"}, code: "S212"},
		{name: "ls missing", op: "ls", payload: map[string]any{"path": "/work/nope"}, code: "S211"},
		{name: "stat", op: "stat", payload: map[string]any{"path": "/work/bin.dat"}, check: func(t *testing.T, res map[string]any) {
			if res["name"] != "bin.dat" || res["mode"] != "0600" || res["size"] != 3.0 || res["is_dir"] != false || res["mtime"].(float64) < 1e9 {
				t.Errorf("stat: %v", res)
			}
		}},
		{name: "stat dir", op: "stat", payload: map[string]any{"path": "/work/private"}, check: field("mode", "0700")},
		{name: "stat missing", op: "stat", payload: map[string]any{"path": "/work/nope"}, code: "S211"},
		// read
		{name: "read", op: "read", payload: map[string]any{"path": "/work/src/main.py"}, check: field("body", "print('hello')\nprint('world')\n")},
		{name: "read binary", op: "read", payload: map[string]any{"path": "/work/bin.dat"}, check: func(t *testing.T, res map[string]any) {
			if res["body"] != nil || res["content_b64"] != "/wD+" || res["size"] != 3.0 {
				t.Errorf("read of a binary file: %v", res)
			}
		}},
		{name: "read dir", op: "read", payload: map[string]any{"path": "/work"}, code: "S212"},
		{name: "read missing", op: "read", payload: map[string]any{"path": "/work/nope"}, code: "S211"},
		{name: "read device", op: "read", payload: map[string]any{"path": "/dev/zero"}, code: "S219"},
		// chmod
		{name: "chmod", op: "chmod", payload: map[string]any{"path": "/work/src/main.py", "mode": "0755"}, check: field("updated", 1)},
		{name: "chmod recursive owner", op: "chmod", payload: map[string]any{"path": "/work/a", "uid": 1000, "gid": 1000, "mode": "0750", "recursive": true},
			check: field("updated", 3)},
		{name: "chmod nothing", op: "chmod", payload: map[string]any{"path": "/work/a"}, code: "S210"},
		{name: "chmod missing", op: "chmod", payload: map[string]any{"path": "/work/nope", "mode": "0644"}, code: "S211"},
		// grep
		{name: "grep", op: "grep", payload: map[string]any{"path": "/work", "pattern": "^print\\('w"}, check: func(t *testing.T, res map[string]any) {
			b, _ := json.Marshal(res)
			if string(b) != `{"matches":[{"content":"print('world')","line":2,"path":"/work/src/main.py"}],"truncated":false}` {
				t.Errorf("grep: %s", b)
			}
		}},
		{name: "grep glob", op: "grep", payload: map[string]any{"path": "/work", "pattern": "print", "include_glob": []string{"*.txt"}},
			check: field("matches", []any{})},
		{name: "grep truncated", op: "grep", payload: map[string]any{"path": "/work/src/main.py", "pattern": "print", "max_matches": 1},
			check: field("truncated", true)},
		{name: "grep bad regex", op: "grep", payload: map[string]any{"path": "/work", "pattern": "print("}, code: "S217"},
		{name: "grep empty pattern", op: "grep", payload: map[string]any{"path": "/work", "pattern": ""}, code: "S210"},
		{name: "grep missing", op: "grep", payload: map[string]any{"path": "/work/nope", "pattern": "x"}, code: "S211"},
		// sed
		{name: "sed", op: "sed", payload: map[string]any{"path": "/work", "pattern": `print\('(\w+)'\)`, "replacement": "log('${1}!')"},
			check: func(t *testing.T, res map[string]any) {
				field("total_replacements", 2)(t, res)
				var read map[string]any
				if err := d.c.Call(context.Background(), api.FnFsRead, map[string]any{"sandbox_id": id, "path": "/work/src/main.py"}, &read); err != nil ||
					read["body"] != "log('hello!')\nlog('world!')\n" || read["mode"] != "0755" {
					t.Errorf("after sed: %v %v", read, err)
				}
			}},
		{name: "sed bad regex", op: "sed", payload: map[string]any{"path": "/work", "pattern": "log(", "replacement": "x"}, code: "S217"},
		{name: "sed files and path", op: "sed", payload: map[string]any{"path": "/work", "files": []string{"/work/empty"}, "pattern": "x"}, code: "S210"},
		{name: "sed relative file", op: "sed", payload: map[string]any{"files": []string{"/work/empty", "rel"}, "pattern": "x"}, code: "S210"},
		// mv
		{name: "mv", op: "mv", payload: map[string]any{"src": "/work/src/main.py", "dst": "/work/app.py"}, check: field("moved", true)},
		{name: "mv exists", op: "mv", payload: map[string]any{"src": "/work/app.py", "dst": "/work/empty"}, code: "S213"},
		{name: "mv overwrite", op: "mv", payload: map[string]any{"src": "/work/empty", "dst": "/work/app.py", "overwrite": true}, check: field("moved", true)},
		{name: "mv missing", op: "mv", payload: map[string]any{"src": "/work/nope", "dst": "/work/x"}, code: "S211"},
		{name: "mv across filesystems", op: "mv", payload: map[string]any{"src": "/work/app.py", "dst": "/dev/shm/app.py"}, code: "S219"},
		// rm
		{name: "rm", op: "rm", payload: map[string]any{"path": "/work/app.py"}, check: field("removed", true)},
		{name: "rm not empty", op: "rm", payload: map[string]any{"path": "/work/a"}, code: "S214"},
		{name: "rm recursive", op: "rm", payload: map[string]any{"path": "/work/a", "recursive": true}, check: field("removed", true)},
		{name: "rm missing", op: "rm", payload: map[string]any{"path": "/work/a"}, code: "S211"},
		// the sandbox id
		{name: "bad sandbox id", op: "ls", payload: map[string]any{"sandbox_id": "nope", "path": "/"}, code: "S001"},
		{name: "unknown sandbox", op: "ls", payload: map[string]any{"sandbox_id": "00000000-0000-4000-8000-000000000000", "path": "/"}, code: "S002"},
	}
	runFsSteps(t, d, id, steps)

	// /dev/shm is a 64 MiB tmpfs: filling it is an I/O error (ENOSPC).
	_, err := d.c.Upload(context.Background(), api.FsUploadRequest{SandboxID: id, Path: "/dev/shm/big"}, newPatternReader(70<<20))
	if env := wantCode(t, err, "S216"); !strings.Contains(env.Message, "/dev/shm/big") {
		t.Errorf("S216 message %q does not name the path", env.Message)
	}

	streamRoundTrip(t, d, id, "/work/stream/blob", 4<<20)

	// Nothing the failed calls touched changed: no stray files anywhere.
	if r := d.exec(id, "sh", "-c", "busybox find /work /tmp /dev/shm -name '.hutch-tmp-*' -o -name x -o -name big"); r.Stdout != "" {
		t.Errorf("left behind by failed calls:\n%s", r.Stdout)
	}
	// uid/gid applied inside the sandbox.
	d.setup(id, "mkdir", "/work/own")
	uid := 1000
	if _, err := d.c.FsChmod(context.Background(), api.FsChmodRequest{SandboxID: id, Path: "/work/own", UID: ptr(uint32(uid))}); err != nil {
		t.Fatal(err)
	}
	if r := d.exec(id, "stat", "-c", "%u:%g", "/work/own"); r.Stdout != "1000:0\n" {
		t.Errorf("owner after chmod uid=1000: %q", r.Stdout)
	}

	// The REST routes around the functions.
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"POST", "/fs/bogus", 404, "route_not_found"},
		{"PUT", "/files", 400, "S210"},
		{"GET", "/files?path=/work", 409, "S212"},
		{"GET", "/files?path=rel", 400, "S210"},
		{"DELETE", "/files?path=/work/own", 405, "method_not_allowed"},
		{"GET", "/files?path=/work/bin.dat", 200, ""},
	} {
		req, _ := http.NewRequest(tc.method, d.url+"/v1/sandboxes/"+id+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error api.ErrorEnvelope }
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = json.Unmarshal(raw, &body)
		if resp.StatusCode != tc.status || body.Error.Code != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, raw, tc.status, tc.code)
		}
		if tc.status == 200 && (resp.ContentLength != 3 || resp.Header.Get("X-Hutch-Mode") != "0600" || string(raw) != "\xff\x00\xfe") {
			t.Errorf("download of /work/bin.dat: %q, headers %v", raw, resp.Header)
		}
	}

	// A stopped sandbox is S004.
	if _, err := d.c.Stop(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	runFsSteps(t, d, id, []fsStep{{name: "stopped", op: "stat", payload: map[string]any{"path": "/"}, code: "S004"}})
}

func ptr[T any](v T) *T { return &v }

// TestFsSymlinkResolvesInsideSandbox checks that paths resolve in the
// sandbox's filesystem: a symlink to /etc/passwd reads the sandbox's own
// file (with a marker written into it), never the host's.
func TestFsSymlinkResolvesInsideSandbox(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	marker := fmt.Sprintf("hutch-marker-%d", time.Now().UnixNano())
	d.setup(id, "sh", "-c", "echo "+marker+":x:4242:4242::/:/bin/false >> /etc/passwd && ln -s /etc/passwd /tmp/pw")
	ctx := context.Background()
	res, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/tmp/pw"})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.ReadFile("/etc/passwd")
	if res.Body == nil || !strings.Contains(*res.Body, marker) || *res.Body == string(host) {
		t.Fatalf("read through the symlink did not give the sandbox's /etc/passwd: %v", res.Body)
	}
	_, r, err := d.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/tmp/pw"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != *res.Body {
		t.Fatalf("download through the symlink: %v, %q", err, got)
	}
	st, err := d.c.FsStat(ctx, api.FsStatRequest{SandboxID: id, Path: "/tmp/pw"})
	if err != nil || !st.IsSymlink {
		t.Fatalf("stat of the symlink: %+v %v", st, err)
	}
	grep, err := d.c.FsGrep(ctx, api.FsGrepRequest{SandboxID: id, Path: "/tmp/pw", Pattern: marker})
	if err != nil || len(grep.Matches) != 1 {
		t.Fatalf("grep through the symlink: %+v %v", grep, err)
	}
	// A write through the symlink changes the sandbox's file; the link
	// stays and the host's file is untouched.
	if _, err := d.c.FsSed(ctx, api.FsSedRequest{SandboxID: id, Files: []string{"/tmp/pw"}, Pattern: marker, Replacement: "changed"}); err != nil {
		t.Fatal(err)
	}
	if r := d.exec(id, "sh", "-c", "test -L /tmp/pw && grep -c changed /etc/passwd"); r.Stdout != "1\n" {
		t.Fatalf("sed through the symlink: %+v", r)
	}
	if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, host) {
		t.Fatal("the host's /etc/passwd changed")
	}
}

// TestFsSedAcrossFilesOneReadOnly checks that sed reports a read-only
// file's failure in its result and still edits the others, atomically.
func TestFsSedAcrossFilesOneReadOnly(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	d.setup(id, "sh", "-c", "mkdir /p && for f in a b c; do printf 'v=1\\nv=2\\n' > /p/$f; done && chmod 0444 /p/b")
	res, err := d.c.FsSed(context.Background(), api.FsSedRequest{
		SandboxID: id, Files: []string{"/p/a", "/p/b", "/p/c", "/p/missing"},
		Pattern: `v=(\d)`, Replacement: "v=${1}0", FirstOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []api.FsSedResult{
		{Path: "/p/a", Replacements: 2, Success: true},
		{Path: "/p/b", Success: false, Code: "S215"},
		{Path: "/p/c", Replacements: 2, Success: true},
		{Path: "/p/missing", Success: false, Code: "S211"},
	}
	if len(res.Results) != len(want) || res.TotalReplacements != 4 {
		t.Fatalf("sed: %+v", res)
	}
	for i, w := range want {
		g := res.Results[i]
		if g.Path != w.Path || g.Replacements != w.Replacements || g.Success != w.Success || g.Code != w.Code ||
			(!w.Success && !strings.Contains(g.Error, w.Path)) {
			t.Errorf("result %d: %+v, want %+v", i, g, w)
		}
	}
	r := d.exec(id, "sh", "-c", "cat /p/a /p/b /p/c; stat -c %a /p/b; ls -A /p")
	if want := "v=10\nv=20\nv=1\nv=2\nv=10\nv=20\n444\na\nb\nc\n"; r.Stdout != want {
		t.Fatalf("files after sed:\n%s\nwant:\n%s", r.Stdout, want)
	}
}

// TestFsConcurrentWrites writes many files at once into one sandbox.
func TestFsConcurrentWrites(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			content := strings.Repeat(strconv.Itoa(i), 1000+i)
			_, err := d.c.FsWrite(context.Background(), api.FsWriteRequest{SandboxID: id, Path: fmt.Sprintf("/c/%d/f.txt", i), Content: &content, Parents: true})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		res, err := d.c.FsRead(context.Background(), api.FsReadRequest{SandboxID: id, Path: fmt.Sprintf("/c/%d/f.txt", i)})
		if err != nil || res.Body == nil || *res.Body != strings.Repeat(strconv.Itoa(i), 1000+i) {
			t.Fatalf("file %d: %v", i, err)
		}
	}
}

// patternReader yields size deterministic pseudo-random bytes without
// holding them, hashing what it yields.
type patternReader struct {
	rng  *rand.ChaCha8
	left int64
	sum  hashWriter
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func newPatternReader(size int64) *patternReader {
	return &patternReader{rng: rand.NewChaCha8([32]byte{1, 2, 3}), left: size, sum: sha256.New()}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.left)]
	p.rng.Read(b)
	p.sum.Write(b)
	p.left -= int64(len(b))
	return len(b), nil
}

func (p *patternReader) hex() string { return hex.EncodeToString(p.sum.Sum(nil)) }

// TestFsStreamRoundTrip200MiB uploads 200 MiB through the streamed route
// and downloads it again (streamRoundTrip).
func TestFsStreamRoundTrip200MiB(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", MemoryMB: 1024})
	up, down := streamRoundTrip(t, d, id, "/data/blob", 200<<20)
	t.Logf("200 MiB: upload %v (%.0f MiB/s), download %v (%.0f MiB/s)", up, 200/up.Seconds(), down, 200/down.Seconds())
}

// streamRoundTrip uploads size bytes to path (its parents made, mode
// 0600) in sandbox id through the streamed route, checks them inside and
// downloads them again, comparing checksums; it returns how long each
// way took.
func streamRoundTrip(t *testing.T, d *daemon, id, path string, size int64) (up, down time.Duration) {
	t.Helper()
	ctx := context.Background()
	src := newPatternReader(size)
	start := time.Now()
	res, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: path, Parents: true, Mode: "0600"}, src)
	if err != nil || res.BytesWritten != size {
		t.Fatalf("upload: %+v %v", res, err)
	}
	up = time.Since(start)
	if r := d.exec(id, "stat", "-c", "%s %a", path); r.Stdout != fmt.Sprintf("%d 600\n", size) {
		t.Fatalf("inside the sandbox: %q, want %d bytes, mode 600", r.Stdout, size)
	}
	start = time.Now()
	entry, body, err := d.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, body)
	body.Close()
	if err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != src.hex() || entry.Size != size || entry.Mode != "0600" {
		t.Fatalf("download: %d bytes, %v, entry %+v", n, err, entry)
	}
	return up, time.Since(start)
}

// vmKiB reads a "Name:   N kB" line of a /proc/<pid>/status text.
func vmKiB(t *testing.T, status, name string) int64 {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no %s in:\n%s", name, status)
	return 0
}

// TestFsStream1GiBMemory moves 1 GiB each way and checks that neither the
// daemon's nor the agent's memory grows by more than 64 MiB. The daemon's
// peak comes from its VmHWM; gVisor's /proc/1/status has no VmHWM, so the
// agent's VmRSS is sampled during the transfers.
// streamMemoryKiB bounds how much a process's peak memory may grow while
// 1 GiB streams through it: an eighth of it. What a stream holds is fixed
// (an HTTP/2 window of 8 MiB, a yamux window of 2 MiB, 1 MiB chunks); the
// rest is garbage the collector has not reclaimed yet, which a machine
// starved of CPU lets pile up to 60-75 MiB (measured on the daemon, the
// same before and after the agent's relink). Memory that grew with the
// stream would exceed it eight times over.
const streamMemoryKiB = 128 << 10

func TestFsStream1GiBMemory(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", MemoryMB: 2048})
	ctx := context.Background()
	const size = 1 << 30
	const limitKiB = streamMemoryKiB
	daemonHWM := func() int64 { return d.statusKiB("VmHWM") }
	agentRSS := func() int64 { return vmKiB(t, d.exec(id, "cat", "/proc/1/status").Stdout, "VmRSS") }
	d.setup(id, "sh", "-c", fmt.Sprintf("head -c %d /dev/zero > /tmp/big", size))
	daemonBase, agentBase := daemonHWM(), agentRSS()

	// Sample the agent while the transfers run.
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() {
		most := agentBase
		for {
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(250 * time.Millisecond):
				most = max(most, agentRSS())
			}
		}
	}()
	start := time.Now()
	res, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/dev/null"}, newPatternReader(size))
	up := time.Since(start)
	var n int64
	if err == nil {
		start = time.Now()
		var body io.ReadCloser
		if _, body, err = d.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/tmp/big"}); err == nil {
			n, err = io.Copy(io.Discard, body)
			body.Close()
		}
	}
	down := time.Since(start)
	close(stop)
	agentPeak := <-peak
	if err != nil || res.BytesWritten != size || n != size {
		t.Fatalf("transfers: upload %+v, download %d bytes: %v", res, n, err)
	}
	daemonGrowth, agentGrowth := daemonHWM()-daemonBase, agentPeak-agentBase
	t.Logf("1 GiB: upload %v (%.0f MiB/s), download %v (%.0f MiB/s); growth: daemon peak RSS %d KiB (from %d), agent RSS %d KiB (from %d)",
		up, 1024/up.Seconds(), down, 1024/down.Seconds(), daemonGrowth, daemonBase, agentGrowth, agentBase)
	if daemonGrowth > limitKiB || agentGrowth > limitKiB {
		t.Fatalf("memory grew by more than %d KiB: daemon %d KiB, agent %d KiB", limitKiB, daemonGrowth, agentGrowth)
	}
}

// TestFsInterruptedUpload cuts uploads off midway: nothing appears at the
// target and an existing file keeps its old content.
func TestFsInterruptedUpload(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	ctx := context.Background()
	old := "old content"
	if _, err := d.c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: "/up/existing", Content: &old, Parents: true}); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(d.url)
	for _, target := range []string{"/up/new", "/up/existing"} {
		// A raw request that promises 8 MiB, sends 1 MiB and hangs up.
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /v1/sandboxes/%s/files?path=%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n",
			id, url.QueryEscape(target), u.Host, 8<<20)
		if _, err := conn.Write(bytes.Repeat([]byte("p"), 1<<20)); err != nil {
			t.Fatal(err)
		}
		// It hangs up once the agent is writing the upload (its temporary
		// file is there), so the cut comes midway, not before the start.
		if !testutil.Poll(time.Minute, func() bool {
			ls, err := d.c.FsLs(ctx, api.FsLsRequest{SandboxID: id, Path: "/up"})
			if err != nil {
				t.Fatal(err)
			}
			return slices.ContainsFunc(ls.Entries, func(e api.FsEntry) bool { return strings.HasPrefix(e.Name, ".hutch-tmp-") })
		}) {
			t.Fatalf("the upload to %s never started", target)
		}
		conn.Close()
	}
	// A client whose context ends midway.
	cctx, cancel := context.WithCancel(ctx)
	_, err := d.c.Upload(cctx, api.FsUploadRequest{SandboxID: id, Path: "/up/cancelled"},
		io.MultiReader(bytes.NewReader(make([]byte, 1<<20)), readerFunc(func([]byte) (int, error) {
			cancel()
			<-cctx.Done()
			return 0, cctx.Err()
		})))
	if err == nil {
		t.Fatal("a cancelled upload succeeded")
	}
	// The agent cleans up once it sees the stream end.
	var ls api.FsLsResponse
	testutil.Poll(time.Minute, func() bool {
		if ls, err = d.c.FsLs(ctx, api.FsLsRequest{SandboxID: id, Path: "/up"}); err != nil {
			t.Fatal(err)
		}
		return len(ls.Entries) == 1
	})
	if len(ls.Entries) != 1 || ls.Entries[0].Name != "existing" {
		t.Fatalf("after interrupted uploads /up holds %+v, want only existing", ls.Entries)
	}
	if res, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/up/existing"}); err != nil || *res.Body != old {
		t.Fatalf("existing file after an interrupted upload: %v %v", res.Body, err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestFsCLI drives the fs commands, upload and download through the CLI.
func TestFsCLI(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := d.cli(stdin, args...)
		if code != 0 {
			t.Fatalf("hutch %q: exit %d\n%s", args, code, errOut)
		}
		return out
	}
	run("", "fs", "mkdir", id, "/w", "-p")
	run("", "fs", "write", id, "/w/a.txt", "--content", "alpha\nbeta\n")
	run("piped\x00bytes", "fs", "write", id, "/w/b.bin")
	if out := run("", "fs", "read", id, "/w/b.bin"); out != "piped\x00bytes" {
		t.Errorf("fs read of a binary file: %q", out)
	}
	if out := run("", "fs", "ls", id, "/w"); !strings.Contains(out, "a.txt") || !strings.Contains(out, "b.bin") {
		t.Errorf("fs ls:\n%s", out)
	}
	if out := run("", "fs", "grep", id, "^b", "/w"); out != "/w/a.txt:2:beta\n" {
		t.Errorf("fs grep: %q", out)
	}
	if out := run("", "fs", "sed", id, "beta", "gamma", "/w/a.txt"); out != "/w/a.txt: 1\n" {
		t.Errorf("fs sed: %q", out)
	}
	run("", "fs", "chmod", id, "/w/a.txt", "0640")
	if out := run("", "fs", "stat", id, "/w/a.txt", "--json"); !strings.Contains(out, `"mode": "0640"`) {
		t.Errorf("fs stat: %s", out)
	}
	run("", "fs", "mv", id, "/w/a.txt", "/w/c.txt")
	if out := run("", "fs", "read", id, "/w/c.txt"); out != "alpha\ngamma\n" {
		t.Errorf("fs read: %q", out)
	}
	// upload from stdin and a file, download to stdout and a directory.
	local := t.TempDir()
	big := bytes.Repeat([]byte("0123456789"), 300000) // 3 MB: streamed by fs read
	if err := os.WriteFile(local+"/big", big, 0o755); err != nil {
		t.Fatal(err)
	}
	run("", "upload", id, local+"/big", "/w/big", "--mode", "0755")
	run("from stdin\n", "upload", id, "-", "/w/in.txt")
	if out := run("", "download", id, "/w/in.txt", "-"); out != "from stdin\n" {
		t.Errorf("download to stdout: %q", out)
	}
	run("", "download", id, "/w/big", local+"/dir-target-"+"x")
	if got, _ := os.ReadFile(local + "/dir-target-x"); !bytes.Equal(got, big) {
		t.Errorf("download to a file: %d bytes", len(got))
	}
	if out := run("", "fs", "read", id, "/w/big"); out != string(big) {
		t.Errorf("fs read of a 3 MB file: %d bytes", len(out))
	}
	run("", "fs", "rm", id, "/w", "-r")
	// Errors: the S-code on stderr, exit 1, no partial local file.
	_, errOut, code := d.cli("", "fs", "ls", id, "/w")
	if code != 1 || !strings.Contains(errOut, "S211") || !strings.Contains(errOut, "/w") {
		t.Errorf("fs ls of a removed directory: exit %d, %q", code, errOut)
	}
	_, errOut, code = d.cli("", "download", id, "/nope", local+"/nope")
	if _, err := os.Stat(local + "/nope"); code != 1 || !strings.Contains(errOut, "S211") || err == nil {
		t.Errorf("download of a missing file: exit %d, %q, local file %v", code, errOut, err)
	}
}

// TestFsOperationsAreActivity checks that filesystem operations keep an
// idle sandbox from being reaped.
func TestFsOperationsAreActivity(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", IdleTimeoutSecs: 15})
	ctx := context.Background()
	content := "x"
	ops := []func() error{
		func() error { _, err := d.c.FsLs(ctx, api.FsLsRequest{SandboxID: id, Path: "/"}); return err },
		func() error {
			_, err := d.c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: "/tmp/a", Content: &content})
			return err
		},
		func() error { _, err := d.c.FsStat(ctx, api.FsStatRequest{SandboxID: id, Path: "/tmp/a"}); return err },
		func() error {
			_, err := d.c.FsGrep(ctx, api.FsGrepRequest{SandboxID: id, Path: "/tmp/a", Pattern: "x"})
			return err
		},
		func() error {
			_, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/tmp/b"}, strings.NewReader("y"))
			return err
		},
	}
	// The reaper passes every 7.5 s (half the idle timeout): 36 s of calls
	// 2 s apart span passes that would have reaped a sandbox idle for 15 s,
	// while a slow call on a busy machine still leaves a gap well under it.
	for i := 0; i < 18; i++ {
		if err := ops[i%len(ops)](); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(2 * time.Second)
	}
	info, err := d.c.Get(ctx, id)
	if err != nil || info.Stopped {
		t.Fatalf("sandbox reaped despite filesystem activity: %+v %v", info, err)
	}
}
