package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

// TestFsAsImageUser checks that the sandbox::fs operations of an image
// whose config sets User 1000 run as that user: what they write is the
// user's, a root-only file is refused, also through a symlink the user
// planted, and root's directories refuse writes.
func TestFsAsImageUser(t *testing.T) {
	reg := ocitest.NewRegistry(t, "", "")
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t)...)
	top := ocitest.Layer(t, ocitest.Reg("etc/shadow", "root:s3cret\n", 0o600))
	ref := reg.Push(t, "tools/user:1", ocitest.Image(t, ocitest.Config{User: "1000", Env: []string{"PATH=/bin"}}, base, top))
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {user: %q}\nimage_allowlist: [user]\n", ref)))
	id := d.create(api.CreateRequest{Image: "user"})
	ctx := context.Background()

	// The user plants a link to root's file in its home.
	if r := d.exec(id, "busybox", "ln", "-s", "/etc/shadow", "/home/app/link"); !r.Success {
		t.Fatalf("ln -s as the user: %+v", r)
	}
	runFsSteps(t, d, id, []fsStep{
		{name: "write in home", op: "write", payload: map[string]any{"path": "/home/app/new/f", "content": "mine", "parents": true}},
		{name: "mkdir in home", op: "mkdir", payload: map[string]any{"path": "/home/app/dir"}},
		{name: "read root-only", op: "read", payload: map[string]any{"path": "/etc/shadow"}, code: "S215"},
		{name: "read through link", op: "read", payload: map[string]any{"path": "/home/app/link"}, code: "S215"},
		{name: "write through link", op: "write", payload: map[string]any{"path": "/home/app/link", "content": "x"}, code: "S215"},
		{name: "chmod root-only", op: "chmod", payload: map[string]any{"path": "/etc/shadow", "mode": "0644"}, code: "S215"},
		{name: "write in /etc", op: "write", payload: map[string]any{"path": "/etc/new", "content": "x"}, code: "S215"},
		{name: "rm root's", op: "rm", payload: map[string]any{"path": "/etc/shadow"}, code: "S215"},
		{name: "shadow intact", op: "stat", payload: map[string]any{"path": "/etc/shadow"}, check: field("size", 12)},
	})
	if r := d.exec(id, "stat", "-c", "%u:%g", "/home/app/new", "/home/app/new/f", "/home/app/dir"); r.Stdout != "1000:1000\n1000:1000\n1000:1000\n" {
		t.Errorf("owners of what fs made: %+v", r)
	}

	// The streamed routes too.
	_, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/etc/streamed"}, strings.NewReader("x"))
	wantCode(t, err, "S215")
	_, _, err = d.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/home/app/link"})
	wantCode(t, err, "S215")
}
