package e2bapi

// The tokens of a sandbox: envdAccessToken (X-Access-Token, sent on envd
// calls and on /execute) and trafficAccessToken (E2B-Traffic-Access-Token,
// sent on every code-interpreter call). Each is
//
//	e2b1.<base64url(owner)>.<base64url(HMAC-SHA256(secret, kind 0 owner 0 sandbox_id))>
//
// so the daemon keeps no table of them: a request names its sandbox
// (E2b-Sandbox-Id), and the token proves, unforgeably, that the owner
// it names created or connected to that sandbox. The secret is 32 random
// bytes in the data dir (SecretFile), made on first start; replacing it
// (removing it and restarting the daemon) revokes every token.
//
// A valid token opens something only while its sandbox runs or is paused
// and its owner may use the E2B API (router.go): stopping a sandbox
// revokes its tokens, and removing an owner's key from e2b.api_keys
// revokes all of theirs.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SecretFile is the name of the token secret in the daemon's data dir.
const SecretFile = "e2b-token.key"

const (
	secretBytes = 32
	tokenPrefix = "e2b1."
	// maxTokenBytes bounds a token read from a request.
	maxTokenBytes = 256
)

// The kinds of token: one never passes for the other.
const (
	kindEnvd    = "envd"
	kindTraffic = "traffic"
)

// Signer mints and checks sandboxes' tokens.
type Signer struct{ secret []byte }

// NewSigner returns a Signer of secret (at least 32 bytes).
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < secretBytes {
		return nil, fmt.Errorf("e2b token secret is %d bytes; at least %d", len(secret), secretBytes)
	}
	return &Signer{secret: secret}, nil
}

// LoadSigner reads the secret of dataDir, making it on first use (mode
// 0600).
func LoadSigner(dataDir string) (*Signer, error) {
	path := filepath.Join(dataDir, SecretFile)
	secret, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		secret = make([]byte, secretBytes)
		_, _ = rand.Read(secret)
		err = writeNew(path, secret)
		if errors.Is(err, os.ErrExist) { // another start won the race
			secret, err = os.ReadFile(path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("e2b token secret: %w", err)
	}
	return NewSigner(secret)
}

// writeNew puts b at path whole or not at all (a temporary file, synced,
// then linked): os.ErrExist when path is there already.
func writeNew(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".e2b-token-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}

// Token is the token of kind for sandbox id of owner.
func (s *Signer) Token(kind, owner, id string) string {
	enc := base64.RawURLEncoding
	return tokenPrefix + enc.EncodeToString([]byte(owner)) + "." + enc.EncodeToString(s.mac(kind, owner, id))
}

func (s *Signer) mac(kind, owner, id string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(kind + "\x00" + owner + "\x00" + id))
	return m.Sum(nil)
}

// errBadToken is every failed check: the reason is not told.
var errBadToken = errors.New("invalid sandbox access token")

// Owner checks token, of one of kinds, for sandbox id and returns the
// owner it names.
func (s *Signer) Owner(token, id string, kinds ...string) (string, error) {
	if len(token) > maxTokenBytes {
		return "", errBadToken
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	ownerPart, sigPart, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return "", errBadToken
	}
	owner, err1 := base64.RawURLEncoding.DecodeString(ownerPart)
	sig, err2 := base64.RawURLEncoding.DecodeString(sigPart)
	if err1 != nil || err2 != nil {
		return "", errBadToken
	}
	match := 0
	for _, k := range kinds {
		match |= hmacEqual(sig, s.mac(k, string(owner), id))
	}
	if match == 0 {
		return "", errBadToken
	}
	return string(owner), nil
}

func hmacEqual(a, b []byte) int {
	if hmac.Equal(a, b) {
		return 1
	}
	return 0
}
