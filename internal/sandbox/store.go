package sandbox

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// record is the persisted metadata of one sandbox.
type record struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Image    string `json:"image"`
	ImageID  string `json:"image_id"`
	Owner    string `json:"owner,omitempty"`
	Runtime  string `json:"runtime"`
	CPUs     uint32 `json:"cpus"`
	MemoryMB uint32 `json:"memory_mb"`
	Network  bool   `json:"network"`
	// Egress is its egress policy (internal/sandbox/egress); nil is none.
	Egress          *api.EgressPolicy `json:"egress,omitempty"`
	IdleTimeoutSecs uint64            `json:"idle_timeout_secs"`
	Env             []string          `json:"env,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	// OnIdle, AutoResume, TimeoutSecs and Metadata are the create's life
	// terms (terms.go).
	OnIdle      string            `json:"on_idle,omitempty"`
	AutoResume  bool              `json:"auto_resume,omitempty"`
	TimeoutSecs uint64            `json:"timeout_secs,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// Volumes are the volumes it mounts (volumes.go).
	Volumes []api.VolumeMount `json:"volumes,omitempty"`
	Stopped bool              `json:"stopped"`
	// StopCause is absent from records of daemons before it was kept.
	StopCause  runtime.Cause `json:"stop_cause,omitempty"`
	StopReason string        `json:"stop_reason,omitempty"`
	StoppedAt  time.Time     `json:"stopped_at,omitzero"`

	// unforwarded are the loopback ports its create-time env named that
	// are not forwarded (SandboxNetwork.Gateway); answered by the create,
	// not persisted.
	unforwarded []uint16
	// forwarded are the ports its gateway forwards, which a wake from
	// hibernation forwards again; not persisted.
	forwarded []uint16
	// mounts are its volumes' bind mounts while it lives (volumes.go);
	// not persisted.
	mounts []runtime.Mount
}

var (
	bucketSandboxes = []byte("sandboxes")
	bucketNetworks  = []byte("networks")
)

// store persists sandbox records, and the records of services in buckets
// of their own (Records), in a bbolt file.
type store struct {
	db *bolt.DB
}

// openStore opens (creating) the metadata database at path.
func openStore(path string) (*store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening metadata store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSandboxes, bucketNetworks} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising metadata store: %w", err)
	}
	return &store{db: db}, nil
}

// put writes rec, replacing any record with its id.
func (s *store) put(rec *record) error { return s.putIn(bucketSandboxes, rec.ID, rec) }

// remove deletes the record of id, if any.
func (s *store) remove(id string) error { return s.removeIn(bucketSandboxes, id) }

// all returns every record; unreadable ones are reported by id.
func (s *store) all() ([]*record, []string, error) {
	return allIn(s, bucketSandboxes, func(r *record) string { return r.ID })
}

// putIn writes v as JSON under id in bucket.
func (s *store) putIn(bucket []byte, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte(id), b)
	})
}

// removeIn deletes id from bucket, if it is there.
func (s *store) removeIn(bucket []byte, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Delete([]byte(id))
	})
}

// allIn decodes every value of bucket; those that do not decode, or whose
// idOf is not their key, are reported by key.
func allIn[T any](s *store, bucket []byte, idOf func(*T) string) ([]*T, []string, error) {
	return AllRecords(storeBucket{s, bucket}, idOf)
}

// bucket is s's bucket name as Records, made if it is new.
func (s *store) bucket(name string) (storeBucket, error) {
	err := s.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte(name))
		return err
	})
	if err != nil {
		return storeBucket{}, fmt.Errorf("opening the %s records: %w", name, err)
	}
	return storeBucket{s, []byte(name)}, nil
}

// storeBucket is one bucket of s as Records.
type storeBucket struct {
	s    *store
	name []byte
}

func (b storeBucket) Put(key string, v any) error { return b.s.putIn(b.name, key, v) }
func (b storeBucket) Remove(key string) error     { return b.s.removeIn(b.name, key) }

func (b storeBucket) Get(key string, v any) (bool, error) {
	found := false
	err := b.s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(b.name).Get([]byte(key))
		if raw == nil {
			return nil
		}
		found = true
		return json.Unmarshal(raw, v)
	})
	return found, err
}

func (b storeBucket) Each(fn func(key string, value []byte) error) error {
	return b.s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(b.name).ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

func (s *store) close() error { return s.db.Close() }
