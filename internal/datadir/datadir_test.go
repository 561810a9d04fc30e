package datadir_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hutch-dev/hutch/internal/datadir"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox/records"
	"github.com/hutch-dev/hutch/internal/secrets"
	"github.com/hutch-dev/hutch/internal/storefmt"
)

// copyDir copies the fixture directory src to a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
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
	later := strconv.Itoa(datadir.Current+1) + "\n"
	if err := os.WriteFile(filepath.Join(newer, datadir.FormatFile), []byte(later), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := datadir.Open(newer)
	if err == nil || !strings.Contains(err.Error(), "newer than this daemon's") {
		t.Fatalf("a newer dir: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(newer, datadir.FormatFile)); string(b) != later {
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

// TestMigrateFormat1 opens testdata/format1, a data dir written by the
// stores of the commit before they carried versions (8a64c11): hutch.db
// with a sandbox and a snapshot record, events.db with an event,
// secrets/secrets.json with a secret. Open migrates the dir to Current;
// each store then opens in its format 0, reads its data back whole and
// records its format; a store of a newer format is refused, saying so.
func TestMigrateFormat1(t *testing.T) {
	dir := copyDir(t, "testdata/format1")
	if from, err := datadir.Open(dir, "daemon.lock"); err != nil || from != 1 {
		t.Fatalf("Open = %d, %v; want format 1 migrated", from, err)
	}
	if v, _ := datadir.Read(dir); v != datadir.Current {
		t.Fatalf("after the migration the dir is in format %d, want %d", v, datadir.Current)
	}

	hutchDB := filepath.Join(dir, "hutch.db")
	db, err := records.Open(hutchDB, "sandboxes", "networks")
	if err != nil {
		t.Fatal(err)
	}
	var sb, snap map[string]any
	okSB, err1 := db.In("sandboxes").Get("sb-1", &sb)
	snaps, err2 := db.Bucket("snapshots")
	okSnap, err3 := snaps.Get("snap-1", &snap)
	if !okSB || !okSnap || err1 != nil || err2 != nil || err3 != nil || sb["owner"] != "alice" || snap["name"] != "kept" {
		t.Errorf("hutch.db after the migration: %v %v (%v %v %v)", sb, snap, err1, err2, err3)
	}
	db.Close()
	if v := boltVersion(t, hutchDB); v != 1 {
		t.Errorf("hutch.db is in format %d after its open, want 1", v)
	}

	eventsDB := filepath.Join(dir, "events.db")
	opts := events.Options{MaxCount: 1000, MaxBytes: 1 << 20, MaxAge: 100000 * time.Hour}
	l, err := events.Open(eventsDB, opts)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := l.List(events.Filter{Owner: "alice"}, 10)
	if len(evs) != 1 || evs[0].Type != "sandbox.created" || evs[0].SandboxID != "sb-1" {
		t.Errorf("events after the migration: %+v", evs)
	}
	l.Close()
	if v := boltVersion(t, eventsDB); v != 1 {
		t.Errorf("events.db is in format %d after its open, want 1", v)
	}

	s, err := secrets.Open(filepath.Join(dir, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Value("alice", "TOKEN"); !ok || v != "kept-value" {
		t.Errorf("secret after the migration: %q, %v", v, ok)
	}

	// A store of a newer format is refused and left as it was.
	setBoltVersion(t, hutchDB, 2)
	if _, err := records.Open(hutchDB, "sandboxes"); err == nil || !strings.Contains(err.Error(), "format 2, newer than this daemon's 1") {
		t.Errorf("hutch.db of format 2: %v", err)
	}
	if v := boltVersion(t, hutchDB); v != 2 {
		t.Errorf("the refused hutch.db was changed: format %d", v)
	}
	setBoltVersion(t, eventsDB, 7)
	if _, err := events.Open(eventsDB, opts); err == nil || !strings.Contains(err.Error(), "format 7, newer than this daemon's 1") {
		t.Errorf("events.db of format 7: %v", err)
	}
}

// boltVersion reads the format bucket of the bbolt file at path.
func boltVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := 0
	db.View(func(tx *bolt.Tx) error { v = storefmt.BoltVersion(tx); return nil })
	return v
}

// setBoltVersion writes format v into the bbolt file at path, as a later
// hutch would.
func setBoltVersion(t *testing.T, path string, v int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("format"))
		if err != nil {
			return err
		}
		return b.Put([]byte("version"), []byte(strconv.Itoa(v)))
	}); err != nil {
		t.Fatal(err)
	}
}
