package envd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestWatchDir(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	st, err := e.fs(codecs["json"]).WatchDir(testCtx(t), connect.NewRequest(&pb.WatchDirRequest{Path: dir, Recursive: true, IncludeEntry: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Receive() || st.Msg().GetStart() == nil {
		t.Fatalf("the first event is not start: %v %v", st.Msg(), st.Err())
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for st.Receive() {
		ev := st.Msg().GetFilesystem()
		if ev.GetName() == "new.txt" && ev.GetType() == pb.EventType_EVENT_TYPE_CREATE {
			if ev.GetEntry().GetPath() != filepath.Join(dir, "new.txt") {
				t.Errorf("the create event's entry %v", ev.GetEntry())
			}
			return
		}
	}
	t.Fatalf("the stream ended without new.txt's create: %v", st.Err())
}

func TestPolledWatchers(t *testing.T) {
	e := newEnv(t)
	fc := e.fs(nil)
	ctx := testCtx(t)
	dir := t.TempDir()
	created, err := fc.CreateWatcher(ctx, connect.NewRequest(&pb.CreateWatcherRequest{Path: dir}))
	if err != nil {
		t.Fatal(err)
	}
	id := created.Msg.GetWatcherId()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		got, err := fc.GetWatcherEvents(ctx, connect.NewRequest(&pb.GetWatcherEventsRequest{WatcherId: id}))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got.Msg.GetEvents() {
			if ev.GetName() == "sub" && ev.GetType() == pb.EventType_EVENT_TYPE_CREATE {
				return true
			}
		}
		return false
	}, "the watcher holds sub's create")

	// Another owner, or another sandbox, does not see it.
	_, err = e.fs(nil, "X-Owner", "mallory").GetWatcherEvents(ctx, connect.NewRequest(&pb.GetWatcherEventsRequest{WatcherId: id}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = e.fs(nil, api.HeaderE2BSandboxID, "another").RemoveWatcher(ctx, connect.NewRequest(&pb.RemoveWatcherRequest{WatcherId: id}))
	wantCode(t, err, connect.CodeNotFound)

	if _, err := fc.RemoveWatcher(ctx, connect.NewRequest(&pb.RemoveWatcherRequest{WatcherId: id})); err != nil {
		t.Fatal(err)
	}
	_, err = fc.GetWatcherEvents(ctx, connect.NewRequest(&pb.GetWatcherEventsRequest{WatcherId: id}))
	wantCode(t, err, connect.CodeNotFound)
}

func TestWatcherBounds(t *testing.T) {
	ws := newWatchers()
	for i := range maxWatchersPerOwner {
		w := &watcher{owner: owner, cancel: func() {}}
		if err := ws.add(string(rune('a'+i%26))+string(rune('A'+i/26)), w); err != nil {
			t.Fatalf("watcher %d: %v", i, err)
		}
	}
	wantCode(t, ws.room(owner), connect.CodeResourceExhausted)
	if err := ws.room("bob"); err != nil {
		t.Errorf("another owner has room: %v", err)
	}
}
