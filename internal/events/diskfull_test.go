package events

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// errorCount counts the records at level Error a Log logs.
type errorCount struct {
	slog.Handler
	n atomic.Int64
}

func (h *errorCount) Enabled(context.Context, slog.Level) bool { return true }

func (h *errorCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.n.Add(1)
	}
	return nil
}

// TestAFullDiskLosesNoEvent: with the log's file on a full file system
// its writes fail; the events stay in memory, are retried, and are all in
// the file once space returns (issue 38: 2).
func TestAFullDiskLosesNoEvent(t *testing.T) {
	testutil.RequiresRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	file := filepath.Join(dir, "events.db")
	h := &errorCount{Handler: slog.DiscardHandler}
	opts := Options{MaxCount: 10000, MaxAge: time.Hour, Logger: slog.New(h)}
	l, err := Open(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(Event{Type: "before", Owner: "alice"})
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for _, err = f.Write(make([]byte, 4096)); err == nil; _, err = f.Write(make([]byte, 4096)) {
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	data := []byte(`"` + strings.Repeat("x", 2000) + `"`)
	const n = 500
	for range n {
		l.Append(Event{Type: "full", Owner: "alice", Data: data})
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return h.n.Load() >= 2 }, "two failed writes")
	if got, _ := l.List(Filter{Owner: "alice", Type: "full"}, 2*n); len(got) != n {
		t.Errorf("the log serves %d events of the full period, want %d", len(got), n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, _ := l.List(Filter{Owner: "alice"}, 2*n); len(got) != n+1 {
		t.Errorf("after a reopen the log holds %d events, want %d", len(got), n+1)
	}
}
