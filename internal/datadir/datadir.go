// Package datadir versions the daemon's data dir (issue 38: upgrades keep
// the data). The dir's file "format" holds the number of the layout its
// stores are written in; a daemon opens a dir of its own format or an
// older one, migrating it step by step, and refuses a newer one with a
// message that says so instead of misreading it.
//
// Formats:
//
//	0  the releases before formats were versioned: no "format" file.
//	1  the same stores (events.db, jobs.db, webhooks.json, the sandbox,
//	   snapshot and volume directories), now with the "format" file.
//	2  each store carries its own format (internal/storefmt): the bbolt
//	   files hutch.db, events.db and jobs.db in their bucket "format", the
//	   JSON files volumes/volumes.json, webhooks.json and
//	   secrets/secrets.json in their field "format". Each store checks
//	   and migrates its own at its open; a daemon of format 1 would not,
//	   so it refuses the dir.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Current is the format this daemon writes.
const Current = 2

// FormatFile is the name of the file that holds a dir's format.
const FormatFile = "format"

// migrations[i] migrates a dir from format i to i+1.
var migrations = []func(dir string) error{
	// 0 → 1: the stores are unchanged; the dir gets its format file
	// (written by Open after the last step).
	func(string) error { return nil },
	// 1 → 2: each store migrates itself from its format 0 (no version) at
	// its open, which follows; the dir's format tells older daemons.
	func(string) error { return nil },
}

// Open checks the format of data dir dir and migrates it to Current,
// returning the format it was in. A new dir, empty but for the names in
// fresh (the daemon's lock file), is of format Current. A dir of a newer
// format is refused and left as it is.
func Open(dir string, fresh ...string) (from int, err error) {
	from, err = Read(dir, fresh...)
	if err != nil {
		return 0, err
	}
	if from > Current {
		return from, fmt.Errorf("data dir %s is in format %d, newer than this daemon's %d (written by a later hutch): run that release or a newer one; this one will not read it", dir, from, Current)
	}
	for v := from; v < Current; v++ {
		if err := migrations[v](dir); err != nil {
			return from, fmt.Errorf("migrating data dir %s from format %d to %d: %w", dir, v, v+1, err)
		}
	}
	if from < Current || !exists(filepath.Join(dir, FormatFile)) {
		if err := write(dir, Current); err != nil {
			return from, err
		}
	}
	return from, nil
}

// Read returns the format of dir: its format file's, 0 for a dir that
// holds files but no format file, Current for a missing dir or one that
// holds only the names in fresh.
func Read(dir string, fresh ...string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, FormatFile))
	if errors.Is(err, os.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			return Current, nil
		}
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			if !slices.Contains(fresh, e.Name()) {
				return 0, nil
			}
		}
		return Current, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 1 {
		return 0, fmt.Errorf("data dir %s: its %s file says %q, not a format number", dir, FormatFile, clip(string(b)))
	}
	return v, nil
}

// write records format v in dir, atomically.
func write(dir string, v int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, FormatFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(v)+"\n"), 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, FormatFile))
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
