package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The refs/ directory of the cache records what each custom image
// reference resolved to for a platform, so a cached image is found without
// asking its registry: refs/<hash of ref and platform>.json holds a refRecord.

// refRecord is what a reference resolved to when it was last pulled.
type refRecord struct {
	Ref      string    `json:"ref"`
	Platform string    `json:"platform"`
	ID       string    `json:"id"`
	PulledAt time.Time `json:"pulled_at"`
}

func (c cache) refsDir() string { return filepath.Join(c.dir, "refs") }

func (c cache) refPath(ref string, p v1.Platform) string {
	sum := sha256.Sum256([]byte(ref + "\x00" + platformString(p)))
	return filepath.Join(c.refsDir(), hex.EncodeToString(sum[:])+".json")
}

// loadRef returns the image id ref last resolved to on platform p. The
// error wraps fs.ErrNotExist when ref was never pulled.
func (c cache) loadRef(ref string, p v1.Platform) (string, error) {
	b, err := os.ReadFile(c.refPath(ref, p))
	if err != nil {
		return "", err
	}
	var r refRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("reading reference record of %s: %w", ref, err)
	}
	if r.Ref != ref || r.Platform != platformString(p) || !validID(r.ID) {
		return "", fmt.Errorf("reading reference record of %s: it describes %q for %s", ref, r.Ref, r.Platform)
	}
	return r.ID, nil
}

// storeRef records that ref resolved to image id on platform p, replacing
// the record atomically.
func (c cache) storeRef(ref string, p v1.Platform, id string) error {
	b, err := json.MarshalIndent(refRecord{Ref: ref, Platform: platformString(p), ID: id, PulledAt: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.refsDir(), ".tmp-*")
	if err != nil {
		return fmt.Errorf("recording reference %s: %w", ref, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.refPath(ref, p))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("recording reference %s: %w", ref, err)
	}
	return nil
}

// removeRefLeftovers deletes the temporary files of reference records
// that a crash left: those older than an hour, so that a record another
// process is writing right now is spared.
func (c cache) removeRefLeftovers() {
	tmps, _ := filepath.Glob(filepath.Join(c.refsDir(), ".tmp-*"))
	for _, p := range tmps {
		if st, err := os.Lstat(p); err == nil && time.Since(st.ModTime()) > time.Hour {
			os.Remove(p)
		}
	}
}

// removeRef forgets what ref resolved to on platform p.
func (c cache) removeRef(ref string, p v1.Platform) error {
	if err := os.Remove(c.refPath(ref, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// remove unpublishes image id and deletes it. The caller holds the build
// lock of id. The entry is first moved to tmp/, so a crash halfway leaves
// a leftover that the next store removes, never half an image in images/.
func (c cache) remove(id string) error {
	if !validID(id) {
		return fmt.Errorf("invalid image id %q", id)
	}
	tmp := c.tmpEntry(id)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Rename(c.entryDir(id), tmp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(tmp)
}

// validID reports whether id is a hex SHA-256, the form of every image id.
func validID(id string) bool {
	return len(id) == 64 && strings.Trim(id, "0123456789abcdef") == ""
}
