package storefmt

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// open opens a bbolt file in a test's directory.
func open(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// check runs Bolt over the file at path with migrations that record
// their steps.
func check(t *testing.T, path string, n int) (from int, steps []int, err error) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	var migs []Migration
	for i := range n {
		migs = append(migs, func(tx *bolt.Tx) error {
			steps = append(steps, i)
			_, err := tx.CreateBucketIfNotExists([]byte("data"))
			return err
		})
	}
	err = db.Update(func(tx *bolt.Tx) error { from, err = Bolt(tx, "store", migs); return err })
	return from, steps, err
}

func version(t *testing.T, path string) int {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	v := -1
	db.View(func(tx *bolt.Tx) error { v = BoltVersion(tx); return nil })
	return v
}

func TestBoltNewOldNewer(t *testing.T) {
	dir := t.TempDir()
	// A new store is of the current format, with no migration run.
	fresh := filepath.Join(dir, "new.db")
	if from, steps, err := check(t, fresh, 2); err != nil || from != 2 || len(steps) != 0 || version(t, fresh) != 2 {
		t.Fatalf("new store: from %d, steps %v, %v, version %d", from, steps, err, version(t, fresh))
	}
	// A store with buckets and no version is format 0: every step runs,
	// in order.
	old := filepath.Join(dir, "old.db")
	db := open(t, old)
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("records")); return err })
	db.Close()
	if from, steps, err := check(t, old, 2); err != nil || from != 0 || len(steps) != 2 || steps[0] != 0 || steps[1] != 1 {
		t.Fatalf("old store: from %d, steps %v, %v", from, steps, err)
	}
	if v := version(t, old); v != 2 {
		t.Fatalf("old store migrated to %d, want 2", v)
	}
	// Once migrated, nothing runs again.
	if from, steps, err := check(t, old, 2); err != nil || from != 2 || len(steps) != 0 {
		t.Fatalf("migrated store: from %d, steps %v, %v", from, steps, err)
	}
	// A daemon that knows only format 1 refuses it, and leaves it as it is.
	if _, _, err := check(t, old, 1); err == nil || !strings.Contains(err.Error(), "store is in format 2, newer than this daemon's 1") {
		t.Fatalf("newer store: %v", err)
	}
	if v := version(t, old); v != 2 {
		t.Fatalf("the refused store was changed to %d", v)
	}
}

func TestBoltFailedMigrationChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db := open(t, path)
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("records")); return err })
	boom := errors.New("boom")
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := Bolt(tx, "store", []Migration{
			func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("half")); return err },
			func(*bolt.Tx) error { return boom },
		})
		return err
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "from format 1 to 2") {
		t.Fatalf("failed migration: %v", err)
	}
	db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("half")) != nil || BoltVersion(tx) != 0 {
			t.Error("a failed migration left its first step or a version")
		}
		return nil
	})
	db.Close()
}

func TestBoltGarbledVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.db")
	db := open(t, path)
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket(bucket)
		return b.Put(versionKey, []byte("x"))
	})
	db.Close()
	if _, _, err := check(t, path, 1); err == nil || !strings.Contains(err.Error(), "not a format number") {
		t.Fatalf("garbled version: %v", err)
	}
}

func TestJSON(t *testing.T) {
	for v, ok := range map[int]bool{0: true, 1: true, 2: false, -1: false} {
		if err := JSON("file", v, 1); (err == nil) != ok {
			t.Errorf("JSON format %d under 1: %v", v, err)
		}
	}
	if err := JSON("webhooks.json", 3, 1); err == nil || !strings.Contains(err.Error(), "webhooks.json is in format 3, newer than this daemon's 1") {
		t.Errorf("newer: %v", err)
	}
	if !IsArray([]byte(" \n[{}]")) || IsArray([]byte(`{"format":1}`)) || IsArray(nil) {
		t.Error("IsArray")
	}
}
