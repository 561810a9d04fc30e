package jobs

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestStoreFormat: a job store as the releases before formats wrote it
// (the jobs bucket, no version) opens, keeps its jobs' sequence and is
// then of format 1; a store of a newer format is refused (issue 38: 7).
func TestStoreFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketJobs)
		if err != nil {
			return err
		}
		_, err = b.NextSequence()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := openStore(path)
	if err != nil {
		t.Fatalf("a store of format 0: %v", err)
	}
	if n, err := st.nextSeq(); err != nil || n != 2 {
		t.Errorf("the migrated store's next sequence: %d, %v; want 2", n, err)
	}
	if err := st.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("format")).Put([]byte("version"), []byte("2"))
	}); err != nil {
		t.Fatal(err)
	}
	st.db.Close()
	if _, err := openStore(path); err == nil || !strings.Contains(err.Error(), "format 2, newer than this daemon's 1") {
		t.Errorf("a store of format 2: %v", err)
	}
}
