package jobs

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/storefmt"
)

// bucketJobs holds every kept job by its sequence number (8 bytes, big
// endian: submission order).
var bucketJobs = []byte("jobs")

// migrations are the job store's format migrations (storefmt).
var migrations = []storefmt.Migration{
	// 0 → 1: the jobs bucket is unchanged; the store gets its version.
	func(*bolt.Tx) error { return nil },
}

// record is a job as it is stored: its description and what only the
// runner reads.
type record struct {
	Seq   uint64 `json:"seq"`
	Owner string `json:"owner"`
	// NotBefore is when a job waiting to be retried may run again.
	NotBefore time.Time   `json:"not_before,omitempty"`
	Submitted time.Time   `json:"submitted"`
	Info      api.JobInfo `json:"info"`
}

// store keeps jobs in their own bbolt file, so that queued jobs and the
// dead-letter list survive restarts.
type store struct{ db *bolt.DB }

func openStore(path string) (*store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening the job store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := storefmt.Bolt(tx, "job store "+path, migrations); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketJobs)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the job store %s: %w", path, err)
	}
	return &store{db: db}, nil
}

func key(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

// nextSeq reserves the next sequence number.
func (s *store) nextSeq() (uint64, error) {
	var n uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.Bucket(bucketJobs).NextSequence()
		return err
	})
	return n, err
}

// put writes rec.
func (s *store) put(rec *record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketJobs).Put(key(rec.Seq), b) })
}

// remove deletes the jobs of seqs.
func (s *store) remove(seqs []uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		for _, n := range seqs {
			if err := b.Delete(key(n)); err != nil {
				return err
			}
		}
		return nil
	})
}

// all reads every job, oldest first; a record that does not decode is
// skipped and reported to bad.
func (s *store) all(bad func(seq uint64, err error)) ([]*record, error) {
	var out []*record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var rec record
			if err := json.Unmarshal(v, &rec); err != nil {
				bad(binary.BigEndian.Uint64(k), err)
				return nil
			}
			out = append(out, &rec)
			return nil
		})
	})
	return out, err
}

func (s *store) close() error { return s.db.Close() }
