package envd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	fspb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// handlerGoroutines counts the goroutines that run the handler's code or
// a stream of the table.
func handlerGoroutines() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "e2bapi/envd.(*") || strings.Contains(g, "functions.NewStream") {
			n++
		}
	}
	return n
}

// A client that goes away mid-stream leaves nothing of its stream behind:
// not the handler, not the table's stream, not the watch.
func TestClientGoneCleansUp(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	st, err := e.process(nil).Start(ctx, connect.NewRequest(&pb.StartRequest{Process: shell("sleep 600")}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	dir := t.TempDir()
	w, err := e.fs(nil).WatchDir(ctx, connect.NewRequest(&fspb.WatchDirRequest{Path: dir}))
	if err != nil || !w.Receive() {
		t.Fatalf("watch: %v %v", err, w.Err())
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if handlerGoroutines() == 0 {
		t.Fatal("no stream goroutines while two streams are open")
	}
	cancel()
	st.Close()
	w.Close()
	testutil.Eventually(t, 30*time.Second, func() bool { return handlerGoroutines() == 0 }, "the streams' goroutines end")
}

// A client that stops reading a stream stalls only that stream: the
// process runs to its end, and other calls are served meanwhile.
func TestStalledClientBlocksNothingElse(t *testing.T) {
	e := newEnv(t)
	pc := e.process(nil)
	st, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: shell("head -c 50000000 /dev/zero")}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	defer st.Close()
	pid := int(st.Msg().GetEvent().GetStart().GetPid())
	// st is not read from here on.
	owned := auth.WithOwner(testCtx(t), owner)
	testutil.Eventually(t, 30*time.Second, func() bool {
		info, err := e.procs.GetProcess(owned, api.ProcessRequest{SandboxID: e.sandbox, Pid: pid})
		return err == nil && info.State == api.ProcessExited
	}, "the noisy process ends")
	if _, err := pc.List(testCtx(t), connect.NewRequest(&pb.ListRequest{})); err != nil {
		t.Fatal(err)
	}
	other, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: shell("echo other")}))
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, other, func() *pb.ProcessEvent { return other.Msg().GetEvent() })
	if got.stdout.String() != "other\n" {
		t.Errorf("another stream's stdout %q", got.stdout.String())
	}
}
