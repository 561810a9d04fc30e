// Package secrets keeps owners' secrets (sandbox::secret::*): values
// hutch's egress proxy writes into the requests of a sandbox toward the
// hosts its policy's transforms name, which never enter a sandbox. They
// are stored encrypted at rest (AES-256-GCM, the owner and name bound as
// additional data) under a key of the daemon's own (a file of its data
// dir, mode 0600), are never returned once set, and are never logged.
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/storefmt"
)

// Limits of secrets.
const (
	maxValue          = 8 << 10
	maxSecretsPerUser = 256
)

// Files of the store, in its directory.
const (
	keyFile   = "secrets.key"
	storeFile = "secrets.json"
)

// entry is a secret as the store keeps it.
type entry struct {
	Owner   string    `json:"owner,omitempty"`
	Name    string    `json:"name"`
	Sealed  []byte    `json:"sealed"` // nonce, then AES-GCM ciphertext
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Store is the secrets of every owner; safe for concurrent use.
type Store struct {
	dir  string
	aead cipher.AEAD
	mu   sync.Mutex
	by   map[string]*entry // owner + "\x00" + name; guarded by mu
}

// Open opens the store in dir, making its key on first use.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	key, err := loadKey(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	s := &Store{dir: dir, aead: aead, by: map[string]*entry{}}
	b, err := os.ReadFile(filepath.Join(dir, storeFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if len(b) > 0 {
		list, err := readStore(b)
		if err != nil {
			return nil, fmt.Errorf("secrets: reading %s: %w", storeFile, err)
		}
		for _, e := range list {
			s.by[key2(e.Owner, e.Name)] = e
		}
	}
	return s, nil
}

// storeFormat is the format of secrets.json (storefmt): 0, before
// formats, was a bare list of entries; 1 is {"format": 1, "secrets": [...]}.
// A file of format 0 is read as it is and written in format 1.
const storeFormat = 1

// storeDoc is secrets.json.
type storeDoc struct {
	Format  int      `json:"format"`
	Secrets []*entry `json:"secrets"`
}

// readStore decodes secrets.json in any format up to storeFormat.
func readStore(b []byte) ([]*entry, error) {
	var doc storeDoc
	if storefmt.IsArray(b) {
		return doc.Secrets, json.Unmarshal(b, &doc.Secrets)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return doc.Secrets, storefmt.JSON(storeFile, doc.Format, storeFormat)
}

// loadKey reads the daemon's 32-byte key, or makes it.
func loadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) != 32 {
			return nil, fmt.Errorf("secrets: %s is not a 32-byte key", path)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := writeFile(path, key); err != nil {
		return nil, err
	}
	return key, nil
}

// writeFile writes b to path atomically, mode 0600.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

func key2(owner, name string) string { return owner + "\x00" + name }

// saveLocked writes the store; s.mu is held.
func (s *Store) saveLocked() error {
	list := make([]*entry, 0, len(s.by))
	for _, e := range s.by {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return key2(list[i].Owner, list[i].Name) < key2(list[j].Owner, list[j].Name) })
	b, err := json.Marshal(storeDoc{Format: storeFormat, Secrets: list})
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(s.dir, storeFile), b)
}

// checkName checks a secret's name (S001).
func checkName(name string) error {
	if !egress.SecretName.MatchString(name) {
		return errdefs.Malformed("secret name %q must be 1 to 128 letters, digits, '_', '-' and '.', starting with a letter or '_'", spec.Clip(name, 80))
	}
	return nil
}

// info describes e, without its value.
func info(e *entry) api.SecretInfo {
	return api.SecretInfo{Name: e.Name, Placeholder: api.SecretPlaceholder(e.Name),
		CreatedAt: e.Created.Format(time.RFC3339), UpdatedAt: e.Updated.Format(time.RFC3339)}
}

// Set stores the caller's secret, in place of one of the same name
// (sandbox::secret::set). The value is not returned, then or ever.
func (s *Store) Set(ctx context.Context, req api.SecretSetRequest) (api.SecretInfo, error) {
	if err := checkName(req.Name); err != nil {
		return api.SecretInfo{}, err
	}
	if req.Value == "" || len(req.Value) > maxValue {
		return api.SecretInfo{}, errdefs.Malformed("a secret's value is 1 to %d bytes", maxValue)
	}
	for _, c := range []byte(req.Value) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return api.SecretInfo{}, errdefs.Malformed("a secret's value goes into HTTP headers: no control characters")
		}
	}
	owner := auth.OwnerFrom(ctx)
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return api.SecretInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "sealing the secret")
	}
	sealed := s.aead.Seal(nonce, nonce, []byte(req.Value), []byte(key2(owner, req.Name)))
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	k := key2(owner, req.Name)
	old := s.by[k]
	if old == nil {
		mine := 0
		for _, e := range s.by {
			if e.Owner == owner {
				mine++
			}
		}
		if mine >= maxSecretsPerUser {
			return api.SecretInfo{}, errdefs.New(errdefs.CodeCapacity, "at most %d secrets per owner", maxSecretsPerUser)
		}
	}
	e := &entry{Owner: owner, Name: req.Name, Sealed: sealed, Created: now, Updated: now}
	if old != nil {
		e.Created = old.Created
	}
	s.by[k] = e
	if err := s.saveLocked(); err != nil {
		if old != nil {
			s.by[k] = old
		} else {
			delete(s.by, k)
		}
		return api.SecretInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "storing the secret")
	}
	return info(e), nil
}

// List lists the caller's secrets, by name, without values
// (sandbox::secret::list).
func (s *Store) List(ctx context.Context, _ api.SecretListRequest) (api.SecretListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.SecretListResponse{Secrets: []api.SecretInfo{}}
	for _, e := range s.by {
		if e.Owner == owner {
			out.Secrets = append(out.Secrets, info(e))
		}
	}
	sort.Slice(out.Secrets, func(i, j int) bool { return out.Secrets[i].Name < out.Secrets[j].Name })
	return out, nil
}

// Delete removes the caller's secret (sandbox::secret::delete).
func (s *Store) Delete(ctx context.Context, req api.SecretRequest) (api.SecretInfo, error) {
	if err := checkName(req.Name); err != nil {
		return api.SecretInfo{}, err
	}
	k := key2(auth.OwnerFrom(ctx), req.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.by[k]
	if e == nil {
		return api.SecretInfo{}, errdefs.New(errdefs.CodeNoSecret, "no secret named %s", req.Name)
	}
	delete(s.by, k)
	if err := s.saveLocked(); err != nil {
		s.by[k] = e
		return api.SecretInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "removing the secret")
	}
	return info(e), nil
}

// Value is owner's secret name, for the egress proxy alone.
func (s *Store) Value(owner, name string) (string, bool) {
	s.mu.Lock()
	e := s.by[key2(owner, name)]
	s.mu.Unlock()
	if e == nil || len(e.Sealed) < s.aead.NonceSize() {
		return "", false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, e.Sealed[:n], e.Sealed[n:], []byte(key2(owner, name)))
	if err != nil {
		return "", false
	}
	return string(plain), true
}
