package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// watchEvents reads w's events as "type path [from old]" lines until the
// test ends.
func watchEvents(t *testing.T, w *watcher) <-chan string {
	got := make(chan string, 256)
	go func() {
		defer close(got)
		for {
			events, err := w.read()
			if err != nil {
				return
			}
			for _, e := range events {
				got <- describe(e)
			}
		}
	}()
	t.Cleanup(func() {
		w.interrupt()
		for range got {
		}
		w.close()
	})
	return got
}

// expect waits until want are all seen, in order, among other events.
func expect(t *testing.T, got <-chan string, want ...string) {
	t.Helper()
	var seen []string
	deadline := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case s, ok := <-got:
			if !ok {
				t.Fatalf("the watch ended; saw %q, still want %q", seen, want)
			}
			seen = append(seen, s)
			if s == want[0] {
				want = want[1:]
			}
		case <-deadline:
			t.Fatalf("saw %q, still want %q", seen, want)
		}
	}
}

func describe(e *agentv1.FsWatchEvent) string {
	s := e.Type + " " + e.Path
	if e.OldPath != "" {
		s += " from " + e.OldPath
	}
	return s
}

func newTestWatcher(t *testing.T, dir string, recursive bool) <-chan string {
	t.Helper()
	w, err := newWatcher(recursive)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.add(dir); err != nil {
		w.close()
		t.Fatal(err)
	}
	return watchEvents(t, w)
}

func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	got := newTestWatcher(t, dir, true)
	p := func(name string) string { return filepath.Join(dir, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p("a.txt"), []byte("one"), 0o644))
	must(os.Chmod(p("a.txt"), 0o600))
	must(os.Rename(p("a.txt"), p("b.txt")))
	must(os.Mkdir(p("sub"), 0o755))
	expect(t, got, "create "+p("a.txt"), "write "+p("a.txt"), "chmod "+p("a.txt"),
		"rename "+p("b.txt")+" from "+p("a.txt"), "create "+p("sub"))
	// The new directory is watched once its create was read.
	must(os.WriteFile(p("sub/c.txt"), []byte("x"), 0o644))
	must(os.Remove(p("b.txt")))
	expect(t, got, "create "+p("sub/c.txt"), "remove "+p("b.txt"))
}

// TestWatcherAtomicWrite: a write's temporary file never shows, and its
// rename onto the target is the target's write.
func TestWatcherAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	got := newTestWatcher(t, dir, false)
	target := filepath.Join(dir, "f.txt")
	for _, content := range []string{"one", "two"} {
		fi, _ := os.Lstat(target)
		a, err := createAtomic(target, nil, fi)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := a.commit(); err != nil {
			t.Fatal(err)
		}
		expect(t, got, "write "+target)
	}
	if err := os.WriteFile(filepath.Join(dir, "last"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Everything before the last file's create was f.txt's.
	for s := range got {
		if s == "create "+filepath.Join(dir, "last") {
			return
		}
		if s != "write "+target {
			t.Errorf("event %q of a write of f.txt", s)
		}
	}
}

func TestWatcherRootRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := newTestWatcher(t, dir, false)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	expect(t, got, "remove "+dir)
}
