package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/metadata"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testUID and testGID are the image user of TestFsAsUser.
const testUID, testGID = 1000, 1000

// userTree makes a tree the test user can reach (the temp dir and its
// parent are opened to others):
//
//	secret (root, 0600)   rootdir/ (root, 0755)
//	home/ (the user's)    home/link -> secret (planted by the user)
func userTree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(d, "secret"), []byte("s3cret"), 0o600))
	must(os.Mkdir(filepath.Join(d, "rootdir"), 0o755))
	must(os.Mkdir(filepath.Join(d, "home"), 0o755))
	must(os.Chown(filepath.Join(d, "home"), testUID, testGID))
	must(os.Symlink(filepath.Join(d, "secret"), filepath.Join(d, "home", "link")))
	must(os.Lchown(filepath.Join(d, "home", "link"), testUID, testGID))
	return d
}

// userAgent makes userTree (it needs root) and starts an agent whose Fs
// calls run as the test user.
func userAgent(t *testing.T) (string, *agentclient.Client) {
	t.Helper()
	testutil.RequiresRoot(t)
	d := userTree(t)
	return d, agenttest.Start(t, agent.Options{}, agentclient.Options{
		FsUser: &agentv1.FsUser{UID: testUID, GID: testGID, Groups: []uint32{testGID}},
	}).Client
}

// owner is the uid and gid of p.
func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

// TestFsAsUser checks that Fs calls run with the permissions of the user
// the client names: root-only files stay closed, also through a symlink
// the user planted, root's directories refuse writes, and what the user
// creates is the user's. Execs on the same client stay root's.
func TestFsAsUser(t *testing.T) {
	d, c := userAgent(t)
	ctx := context.Background()
	secret, link, home := d+"/secret", d+"/home/link", d+"/home"
	write := func(p string, parents bool) error {
		_, err := c.Upload(ctx, &agentv1.FsUploadHeader{Path: p, Parents: parents}, strings.NewReader("data"), nil)
		return err
	}

	for _, p := range []string{secret, link} {
		_, err := c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: p, MaxBytes: 1 << 20})
		wantKind(t, err, permission)
		_, _, err = c.Download(ctx, &agentv1.FsDownloadRequest{Path: p})
		wantKind(t, err, permission)
		// A write through the link would replace root's file.
		wantKind(t, write(p, false), permission)
		_, err = c.Chmod(ctx, &agentv1.FsChmodRequest{Path: p, Mode: new(uint32(0o644))})
		wantKind(t, err, permission)
		_, err = c.Grep(ctx, &agentv1.FsGrepRequest{Path: p, Pattern: "s3cret"})
		if err == nil {
			t.Errorf("grep of %s as the user succeeded", p)
		}
	}
	if got := readFile(t, secret); got != "s3cret" {
		t.Fatalf("secret is now %q", got)
	}
	_, err := c.Rm(ctx, &agentv1.FsRmRequest{Path: secret})
	wantKind(t, err, permission)
	_, err = c.Mv(ctx, &agentv1.FsMvRequest{Src: secret, Dst: home + "/mine"})
	wantKind(t, err, permission)
	wantKind(t, write(d+"/rootdir/f", false), permission)
	wantKind(t, write(d+"/rootdir/sub/f", true), permission)
	_, err = c.Mkdir(ctx, &agentv1.FsMkdirRequest{Path: d + "/rootdir/sub", Mode: 0o755})
	wantKind(t, err, permission)
	if left, _ := os.ReadDir(d + "/rootdir"); len(left) != 0 {
		t.Errorf("the user wrote into root's directory: %v", left)
	}

	// What the user makes is the user's.
	wantKind(t, write(home+"/new/f", true), none)
	_, err = c.Mkdir(ctx, &agentv1.FsMkdirRequest{Path: home + "/dir", Mode: 0o700})
	wantKind(t, err, none)
	for _, p := range []string{home + "/new", home + "/new/f", home + "/dir"} {
		if uid, gid := owner(t, p); uid != testUID || gid != testGID {
			t.Errorf("%s is owned by %d:%d, want %d:%d", p, uid, gid, testUID, testGID)
		}
	}
	if got := readFile(t, home+"/new/f"); got != "data" {
		t.Errorf("the user's file holds %q", got)
	}

	// Only Fs calls change identity.
	resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"id", "-u"}})
	if err != nil || strings.TrimSpace(string(resp.GetStdout())) != "0" {
		t.Errorf("exec id -u on an Fs user's client: %q, %v", resp.GetStdout(), err)
	}
}

// TestFsUserMalformed checks that an Fs call naming its user badly is
// refused rather than run as root.
func TestFsUserMalformed(t *testing.T) {
	fs := rawFs(t)
	d := t.TempDir()
	for _, v := range [][]string{{"app"}, {"1000:1000:", "0:0:"}} {
		ctx := context.Background()
		for _, s := range v {
			ctx = metadata.AppendToOutgoingContext(ctx, agentv1.FsUserKey, s)
		}
		_, err := fs.Mkdir(ctx, &agentv1.FsMkdirRequest{Path: d + "/x", Mode: 0o755})
		wantKind(t, err, invalid)
	}
	if _, err := os.Stat(d + "/x"); !os.IsNotExist(err) {
		t.Errorf("a call with a malformed user ran: %v", err)
	}
}
