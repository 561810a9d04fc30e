// Package records keeps JSON values by key in the named buckets of one
// bbolt file: the core's metadata store (hutch.db) holds the sandboxes'
// records and the services' own (sandbox.Records) in it.
package records

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hutch-dev/hutch/internal/storefmt"
)

// DB is one bbolt file of buckets.
type DB struct{ db *bolt.DB }

// migrations are the metadata store's format migrations (storefmt).
var migrations = []storefmt.Migration{
	// 0 → 1: the buckets are unchanged; the store gets its version.
	func(*bolt.Tx) error { return nil },
}

// Open opens (creating) the metadata database at path, with buckets made
// if they are new. A store of an older format is migrated; one of a newer
// format is refused (storefmt).
func Open(path string, buckets ...string) (*DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening metadata store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := storefmt.Bolt(tx, "metadata store "+path, migrations); err != nil {
			return err
		}
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising metadata store: %w", err)
	}
	return &DB{db}, nil
}

// In is bucket name, which Open made.
func (d *DB) In(name string) Bucket { return Bucket{d.db, []byte(name)} }

// Bucket is bucket name, made if it is new.
func (d *DB) Bucket(name string) (Bucket, error) {
	err := d.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte(name))
		return err
	})
	if err != nil {
		return Bucket{}, fmt.Errorf("opening the %s records: %w", name, err)
	}
	return d.In(name), nil
}

// Close closes the file.
func (d *DB) Close() error { return d.db.Close() }

// Bucket is one bucket of a DB, its values JSON.
type Bucket struct {
	db   *bolt.DB
	name []byte
}

// Put writes v as JSON under key, replacing what was there.
func (b Bucket) Put(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(b.name).Put([]byte(key), raw)
	})
}

// Remove deletes key, if it is there.
func (b Bucket) Remove(key string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(b.name).Delete([]byte(key))
	})
}

// Get decodes the value of key into v; false when there is none.
func (b Bucket) Get(key string, v any) (bool, error) {
	found := false
	err := b.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(b.name).Get([]byte(key))
		if raw == nil {
			return nil
		}
		found = true
		return json.Unmarshal(raw, v)
	})
	return found, err
}

// Each calls fn with every key and its value, in key order; value is
// valid only during the call.
func (b Bucket) Each(fn func(key string, value []byte) error) error {
	return b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(b.name).ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

// WriteDB writes a consistent copy of the whole file (every bucket) to w,
// in one read transaction (issue 41: hutch admin backup).
func (b Bucket) WriteDB(w io.Writer) (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) (err error) {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
