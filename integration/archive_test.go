package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
)

// archiveDaemon serves two busybox images: "user", whose fs operations
// run as app (1000), and "rooted", whose run as root.
func archiveDaemon(t *testing.T) *daemon {
	t.Helper()
	reg := ocitest.NewRegistry(t, "", "")
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t)...)
	user := reg.Push(t, "tools/user:1", ocitest.Image(t, ocitest.Config{User: "1000", Env: []string{"PATH=/bin"}}, base))
	rooted := reg.Push(t, "tools/rooted:1", ocitest.Image(t, ocitest.Config{Env: []string{"PATH=/bin"}}, base))
	return startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {user: %q, rooted: %q}\nimage_allowlist: [user, rooted]\n", user, rooted)))
}

// tarGz is src packed as a tar.gz.
func tarGz(t *testing.T, src string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := tarfs.Pack(zw, src, tarfs.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestArchiveRoundTrip: a directory goes into a sandbox through PUT
// …/archive as the image's user and comes back through GET byte for byte,
// with its modes, mtimes and links; the CLI does the same with
// directories.
func TestArchiveRoundTrip(t *testing.T) {
	d := archiveDaemon(t)
	id := d.create(api.CreateRequest{Image: "user"})
	ctx := context.Background()
	src, _ := tarfstest.Source(t)
	want := tarfstest.Tree(t, src)

	resp, err := d.c.UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: "/home/app/w/tree"}, bytes.NewReader(tarGz(t, src)))
	if err != nil {
		t.Fatal(err)
	}
	if resp != (api.FsUnpackResponse{Entries: tarfstest.SourceEntries, Bytes: tarfstest.SourceBytes, Compression: "gzip"}) {
		t.Errorf("unpack answered %+v", resp)
	}
	// Inside: the user's files with their modes; the script runs.
	r := d.exec(id, "stat", "-c", "%a %u:%g %n", "/home/app/w", "/home/app/w/tree/bin/run.sh", "/home/app/w/tree/data/private", "/home/app/w/tree/data/deep")
	if r.Stdout != "755 1000:1000 /home/app/w\n755 1000:1000 /home/app/w/tree/bin/run.sh\n600 1000:1000 /home/app/w/tree/data/private\n750 1000:1000 /home/app/w/tree/data/deep\n" {
		t.Errorf("in the sandbox: %+v", r)
	}
	if r := d.exec(id, "/home/app/w/tree/data/run-link"); r.Stdout != "ran from an archive\n" {
		t.Errorf("running the script through its link: %+v", r)
	}

	body, err := d.c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: "/home/app/w/tree"})
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(t.TempDir(), "back")
	zr, err := gzip.NewReader(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(back, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := tarfs.OpenRoot(back)
	if err != nil {
		t.Fatal(err)
	}
	err = tarfs.NewExtractor(root, tarfs.Options{}).Extract(zr, nil)
	root.Close()
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := tarfstest.Tree(t, back); got != want {
		t.Errorf("the tree through PUT and GET:\n%s\nwant:\n%s", got, want)
	}
	// Numeric owners travel in the tar.
	raw, err := d.c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: "/home/app/w/tree/bin"})
	if err != nil {
		t.Fatal(err)
	}
	zr, err = gzip.NewReader(raw)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(zr).Next()
	raw.Close()
	if err != nil || hdr.Name != "run.sh" || hdr.Uid != 1000 || hdr.Gid != 1000 || hdr.Uname != "" {
		t.Errorf("the first header of bin: %+v %v", hdr, err)
	}

	// The CLI: upload a directory, download it again elsewhere.
	run := func(args ...string) {
		t.Helper()
		if _, errOut, code := d.cli("", args...); code != 0 {
			t.Fatalf("hutch %q: exit %d\n%s", args, code, errOut)
		}
	}
	run("upload", id, src, "/home/app/cli")
	local := filepath.Join(t.TempDir(), "local", "copy")
	run("download", id, "/home/app/cli", local)
	if got := tarfstest.Tree(t, local); got != want {
		t.Errorf("the tree through the CLI:\n%s\nwant:\n%s", got, want)
	}
	// A file still downloads as a file.
	run("download", id, "/home/app/cli/bin/run.sh", local+"/single")
	if b, _ := os.ReadFile(local + "/single"); string(b) != tarfstest.Script {
		t.Errorf("a file's download: %q", b)
	}

	// Errors: a file is not a directory; the user's permissions hold.
	_, err = d.c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: "/home/app/cli/bin/run.sh"})
	wantCode(t, err, "S212")
	_, err = d.c.UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: "/etc/new"}, bytes.NewReader(tarGz(t, src)))
	wantCode(t, err, "S215")
	_, err = d.c.UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: "/home/app/bad"}, strings.NewReader("\x1f\x8b not really gzip"))
	wantCode(t, err, "S210")
}

// TestArchiveHostile: archives that try to reach outside their directory,
// unpacked as root inside the sandbox, leave everything outside it as it
// was.
func TestArchiveHostile(t *testing.T) {
	d := archiveDaemon(t)
	id := d.create(api.CreateRequest{Image: "rooted"})
	ctx := context.Background()
	d.setup(id, "mkdir", "-p", "/target")
	passwd := d.exec(id, "cat", "/etc/passwd").Stdout
	for _, tc := range []struct {
		name    string
		entries []ocitest.File
		code    string // "" when the archive unpacks (inside)
	}{
		{"dot-dot", []ocitest.File{ocitest.Reg("../escape", "pwned\n", 0o644)}, "S210"},
		{"dot-dot deeper", []ocitest.File{ocitest.Reg("a/../../../etc/escape", "pwned\n", 0o644)}, "S210"},
		{"absolute", []ocitest.File{ocitest.Reg("/etc/passwd", "pwned\n", 0o644)}, ""},
		{"symlink out, then a file through it", []ocitest.File{ocitest.Symlink("esc", "/etc"), ocitest.Reg("esc/escape", "pwned\n", 0o644)}, "S211"},
		{"relative symlink out, then a file through it", []ocitest.File{
			ocitest.Symlink("up", "../../../../etc"), ocitest.Reg("up/escape", "pwned\n", 0o644)}, "S211"},
		{"hard link to /etc/passwd", []ocitest.File{ocitest.Hardlink("stolen", "/etc/passwd")}, "S211"},
		{"hard link out", []ocitest.File{ocitest.Hardlink("stolen", "../etc/passwd")}, "S210"},
		{"device node", []ocitest.File{{Name: "sda", Type: tar.TypeBlock}, {Name: "null", Type: tar.TypeChar}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := "/target/" + strings.NewReplacer(" ", "-", "/", "", ",", "").Replace(tc.name)
			resp, err := d.c.UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: dir}, bytes.NewReader(ocitest.Tar(t, tc.entries...)))
			if tc.code != "" {
				wantCode(t, err, tc.code)
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.name == "device node" && (resp.Skipped != 2 || resp.Entries != 0) {
				t.Errorf("device nodes: %+v", resp)
			}
		})
	}
	// Outside /target nothing changed; inside, what landed is plain.
	if got := d.exec(id, "cat", "/etc/passwd").Stdout; got != passwd {
		t.Errorf("/etc/passwd is now %q", got)
	}
	r := d.exec(id, "sh", "-c", "ls -a / /etc /target | grep -c escape; ls /target/absolute/etc; cat /target/absolute/etc/passwd; ls /target/device-node | wc -l; stat -c %h /etc/passwd")
	if r.Stdout != "0\npasswd\npwned\n0\n1\n" {
		t.Errorf("after the hostile archives: %+v", r)
	}
}
