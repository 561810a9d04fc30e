package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/datadir"
	"github.com/hutch-dev/hutch/internal/events"
)

// copyDir copies the flat fixture directory src to a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestMigrateFormat0 opens testdata/format0, a data dir as the releases
// before formats wrote it (its events.db made by the event log of the
// commit before this package, 5233900): Open migrates it to Current, and
// its events are read back whole.
func TestMigrateFormat0(t *testing.T) {
	dir := copyDir(t, "testdata/format0")
	from, err := datadir.Open(dir, "daemon.lock")
	if err != nil || from != 0 {
		t.Fatalf("Open = %d, %v; want format 0 migrated", from, err)
	}
	if v, err := datadir.Read(dir); err != nil || v != datadir.Current {
		t.Fatalf("after the migration the dir is in format %d (%v), want %d", v, err, datadir.Current)
	}
	if from, err := datadir.Open(dir); err != nil || from != datadir.Current {
		t.Fatalf("a second Open = %d, %v", from, err)
	}
	l, err := events.Open(filepath.Join(dir, "events.db"), events.Options{MaxCount: 1000, MaxBytes: 1 << 20, MaxAge: 100000 * time.Hour, OwnerMaxCount: 1000, OwnerMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	evs, _ := l.List(events.Filter{Owner: "alice"}, 10)
	if len(evs) != 2 || evs[0].Type != "sandbox.created" || evs[1].Type != "sandbox.stopped" || string(evs[1].Data) != `{"cause":"requested"}` {
		t.Fatalf("events after the migration: %+v", evs)
	}
}

// TestNewAndNewer: a new dir (missing, or holding only the lock file) is
// of the current format; a dir of a newer format is refused, saying so,
// and left as it was.
func TestNewAndNewer(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new")
	if from, err := datadir.Open(fresh); err != nil || from != datadir.Current {
		t.Fatalf("a new dir: %d, %v", from, err)
	}
	locked := t.TempDir()
	if err := os.WriteFile(filepath.Join(locked, "daemon.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if from, err := datadir.Open(locked, "daemon.lock"); err != nil || from != datadir.Current {
		t.Fatalf("a dir with only the lock: %d, %v", from, err)
	}
	newer := copyDir(t, "testdata/format0")
	if err := os.WriteFile(filepath.Join(newer, datadir.FormatFile), []byte("2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := datadir.Open(newer)
	if err == nil || !strings.Contains(err.Error(), "newer than this daemon's") {
		t.Fatalf("a newer dir: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(newer, datadir.FormatFile)); string(b) != "2\n" {
		t.Fatalf("the refused dir's format file now says %q", b)
	}
	garbled := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbled, datadir.FormatFile), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := datadir.Open(garbled); err == nil {
		t.Fatal("a garbled format file was accepted")
	}
}
