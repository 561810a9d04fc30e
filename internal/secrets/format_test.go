package secrets

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/storefmt"
)

// TestStoreFormat: the store is written in format 1 (a document with its
// format) and reopens; one of a newer format is refused. The bare list of
// format 0 is read by datadir's TestMigrateFormat1 (issue 38: 7).
func TestStoreFormat(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(auth.WithOwner(context.Background(), "alice"), api.SecretSetRequest{Name: "K", Value: "v"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, storeFile))
	if err != nil || storefmt.IsArray(b) || !strings.HasPrefix(string(b), `{"format":1,`) {
		t.Fatalf("the store file: %s, %v", b, err)
	}
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Value("alice", "K"); !ok || v != "v" {
		t.Errorf("after a reopen: %q, %v", v, ok)
	}
	if err := os.WriteFile(filepath.Join(dir, storeFile), []byte(`{"format":2,"secrets":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "format 2, newer than this daemon's 1") {
		t.Errorf("a store of format 2: %v", err)
	}
}
