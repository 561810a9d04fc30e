package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// TestFsAsUser: file operations, uploads and watches take a user of the
// image for one call; what they create belongs to it, and its permissions
// apply.
func TestFsAsUser(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	d.setup(id, "sh", "-c", "mkdir -m 0777 /shared && echo secret > /root/secret && chmod 600 /root/secret")

	content := "x"
	if _, err := d.c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, User: "1000:1000", Path: "/shared/mine.txt", Content: &content}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.FsMkdir(ctx, api.FsMkdirRequest{SandboxID: id, User: "1000", Path: "/shared/dir"}); err != nil {
		t.Fatal(err)
	}
	if r := d.exec(id, "stat", "-c", "%u:%g %n", "/shared/mine.txt", "/shared/dir"); !strings.Contains(r.Stdout, "1000:1000 /shared/mine.txt") || !strings.Contains(r.Stdout, "1000:") {
		t.Errorf("owners of what user 1000 created: %q", r.Stdout)
	}
	_, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, User: "1000", Path: "/root/secret"})
	wantCode(t, err, "S215")
	if res, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/root/secret"}); err != nil || res.Body == nil || *res.Body != "secret\n" {
		t.Errorf("the image's own user (root) reads it: %+v, %v", res, err)
	}
	_, err = d.c.FsLs(ctx, api.FsLsRequest{SandboxID: id, User: "no-such-user", Path: "/"})
	wantCode(t, err, "S001")
	out, errOut, code := d.cli("", "fs", "write", id, "/shared/cli.txt", "--content", "y", "--user", "1000")
	if code != 0 {
		t.Fatalf("hutch fs write --user: %d %s %s", code, out, errOut)
	}
	if r := d.exec(id, "stat", "-c", "%u", "/shared/cli.txt"); strings.TrimSpace(r.Stdout) != "1000" {
		t.Errorf("owner of the CLI's file: %q", r.Stdout)
	}
}
