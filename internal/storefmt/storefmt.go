// Package storefmt versions each of the daemon's stores (issue 38: 7). A
// bbolt store keeps its format in bucket "format" under key "version"; a
// JSON store file in its top-level field "format". A store is opened in
// its own format or an older one, which is migrated step by step in the
// same transaction (or the same write) as its version; a newer one is
// refused, and left as it is, with a message that says so. A store
// without a version was written before stores had one: format 0.
package storefmt

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// bucket and versionKey are where a bbolt store keeps its format.
var bucket, versionKey = []byte("format"), []byte("version")

// Newer is the error of a store written in a format newer than current,
// the newest this daemon knows.
func Newer(name string, v, current int) error {
	return fmt.Errorf("%s is in format %d, newer than this daemon's %d (written by a later hutch): run that release or a newer one; this one will not read it", name, v, current)
}

// Migration migrates a bbolt store from one format to the next, in the
// transaction that then records the new format.
type Migration func(tx *bolt.Tx) error

// Bolt checks the format of the bbolt store name in tx (writable) before
// anything else touches it, and migrates it to current, the length of
// migrations (migrations[i] goes from i to i+1). It returns the format the
// store was in: current for a new store (one without buckets).
func Bolt(tx *bolt.Tx, name string, migrations []Migration) (from int, err error) {
	current := len(migrations)
	b := tx.Bucket(bucket)
	switch {
	case b != nil:
		raw := b.Get(versionKey)
		v, err := strconv.Atoi(string(raw))
		if err != nil || v < 1 {
			return 0, fmt.Errorf("%s: its format says %q, not a format number", name, clip(raw))
		}
		from = v
	case isEmpty(tx):
		from = current
	}
	if from > current {
		return from, Newer(name, from, current)
	}
	for v := from; v < current; v++ {
		if err := migrations[v](tx); err != nil {
			return from, fmt.Errorf("migrating %s from format %d to %d: %w", name, v, v+1, err)
		}
	}
	if b == nil || from < current {
		if b, err = tx.CreateBucketIfNotExists(bucket); err != nil {
			return from, err
		}
		if err := b.Put(versionKey, []byte(strconv.Itoa(current))); err != nil {
			return from, err
		}
	}
	return from, nil
}

// BoltVersion reads the format of the bbolt store in tx: 0 without one.
func BoltVersion(tx *bolt.Tx) int {
	if b := tx.Bucket(bucket); b != nil {
		v, _ := strconv.Atoi(string(b.Get(versionKey)))
		return v
	}
	return 0
}

// isEmpty reports whether tx's file has no bucket.
func isEmpty(tx *bolt.Tx) bool {
	errFound := errors.New("found")
	return tx.ForEach(func([]byte, *bolt.Bucket) error { return errFound }) == nil
}

// JSON checks the format v of the JSON store file name, read from its
// field "format" (0 when it has none): an error when it is newer than
// current.
func JSON(name string, v, current int) error {
	switch {
	case v > current:
		return Newer(name, v, current)
	case v < 0:
		return fmt.Errorf("%s: its format says %d, not a format number", name, v)
	}
	return nil
}

// IsArray reports whether the JSON document b is an array (after any
// leading space): the files that were bare lists before format 1.
func IsArray(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
