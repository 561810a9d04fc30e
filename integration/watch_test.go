package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestWatchFiles: a watch sees a file created, written, renamed, chmodded
// and removed by an exec, and a file in a directory created after the
// watch began; it ends when its caller goes and, with S004, when its
// sandbox stops.
func TestWatchFiles(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	d.setup(id, "mkdir", "-p", "/work")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan api.FsWatchEvent, 1024)
	done := make(chan error, 1)
	go func() {
		done <- d.c.WatchFiles(ctx, api.FsWatchRequest{SandboxID: id, Path: "/work", Recursive: true}, func(e api.FsWatchEvent) error {
			events <- e
			return nil
		})
	}()
	// The watch is in place once it reports a file touched meanwhile.
	untilSeen(t, "/work/.ready", func(path string) {
		d.exec(id, "touch", path)
	}, func(timeout <-chan time.Time) (string, bool) {
		select {
		case e := <-events:
			return e.Path, true
		case err := <-done:
			t.Fatalf("the watch ended: %v", err)
		case <-timeout:
		}
		return "", false
	})
	d.setup(id, "sh", "-c", "echo one > /work/a.txt; chmod 600 /work/a.txt; mv /work/a.txt /work/b.txt; mkdir /work/sub; rm /work/b.txt")
	want := []string{"create /work/a.txt", "write /work/a.txt", "chmod /work/a.txt", "rename /work/b.txt", "create /work/sub", "remove /work/b.txt"}
	expectWatch(t, events, done, want)
	d.setup(id, "sh", "-c", "echo two > /work/sub/c.txt")
	expectWatch(t, events, done, []string{"create /work/sub/c.txt"})

	// A bad path is refused.
	err := d.c.WatchFiles(context.Background(), api.FsWatchRequest{SandboxID: id, Path: "/work/nope"}, func(api.FsWatchEvent) error { return nil })
	wantCode(t, err, "S211")
	err = d.c.WatchFiles(context.Background(), api.FsWatchRequest{SandboxID: id, Path: "relative"}, func(api.FsWatchEvent) error { return nil })
	wantCode(t, err, "S210")

	// The CLI prints the same, one line per change.
	hutch, _ := binaries(t)
	cli := exec.Command(hutch, "fs", "watch", id, "/work")
	cli.Env = append(os.Environ(), "HUTCH_URL="+d.url)
	stdout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// A file created once the watch is in place is printed as created.
	untilSeen(t, "/work/from-cli", func(path string) {
		d.exec(id, "touch", path)
	}, func(timeout <-chan time.Time) (string, bool) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("hutch fs watch ended")
			}
			if f := strings.Fields(l); len(f) == 2 && f[0] == "create" {
				return f[1], true
			}
			return "", true
		case <-timeout:
		}
		return "", false
	})
	_ = cli.Process.Kill()
	_ = cli.Wait()

	// The sandbox stops: the watch ends with S004.
	if _, err := d.c.Stop(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantCode(t, err, "S004")
	case <-time.After(60 * time.Second):
		t.Fatal("the watch outlived its sandbox")
	}
	// Its caller goes: the watch ends with the caller's error. The caller
	// goes on the watch's first event, so the watch was in place by then
	// (files are touched until it ends).
	id2 := d.create(api.CreateRequest{Image: "python"})
	ctx2, cancel2 := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		ended <- d.c.WatchFiles(ctx2, api.FsWatchRequest{SandboxID: id2, Path: "/tmp"}, func(api.FsWatchEvent) error { cancel2(); return nil })
	}()
	var watchErr error
	n := 0
	if !testutil.Poll(5*time.Minute, func() bool {
		select {
		case watchErr = <-ended:
			return true
		default:
		}
		d.exec(id2, "touch", fmt.Sprintf("/tmp/caller-goes-%d", n))
		n++
		return false
	}) {
		t.Fatal("the watch saw none of the files touched")
	}
	if !errors.Is(watchErr, context.Canceled) {
		t.Errorf("a cancelled watch ended with %v", watchErr)
	}
}

// untilSeen creates a new file named after base (touch) every two
// seconds until next reports one of them, for at most five minutes: a
// watch being set up misses the files created before it was in place.
// next waits for one report until timeout and says whether it had one
// (any other report does not create another file).
func untilSeen(t *testing.T, base string, touch func(path string), next func(timeout <-chan time.Time) (string, bool)) {
	t.Helper()
	giveUp := time.Now().Add(5 * time.Minute)
	made := map[string]bool{}
	for n := 0; time.Now().Before(giveUp); n++ {
		path := fmt.Sprintf("%s-%d", base, n)
		touch(path)
		made[path] = true
		timeout := time.After(2 * time.Second)
		for {
			seen, ok := next(timeout)
			if !ok {
				break
			}
			if made[seen] {
				return
			}
		}
	}
	t.Fatalf("no report of %s-N after five minutes", base)
}

// expectWatch waits until the events named "type path" in want were all
// seen, in order (others may come between).
func expectWatch(t *testing.T, events <-chan api.FsWatchEvent, done <-chan error, want []string) {
	t.Helper()
	var seen []string
	for len(want) > 0 {
		select {
		case e := <-events:
			s := e.Type + " " + e.Path
			seen = append(seen, s)
			if s == want[0] {
				want = want[1:]
			}
		case err := <-done:
			t.Fatalf("the watch ended (%v); saw %q, still want %q", err, seen, want)
		case <-time.After(60 * time.Second):
			t.Fatalf("saw %q, still want %q", seen, want)
		}
	}
}
