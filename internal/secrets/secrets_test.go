package secrets

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestStore: a secret is kept encrypted (its value is in no file),
// read back after a reopen, owner-scoped, never listed with its value;
// bad names and values change nothing.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	alice := auth.WithOwner(context.Background(), "alice")
	bob := auth.WithOwner(context.Background(), "bob")
	const value = "sk-very-secret-value-1234"
	if _, err := s.Set(alice, api.SecretSetRequest{Name: "OPENAI_KEY", Value: value}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []api.SecretSetRequest{{Name: "1x", Value: "v"}, {Name: "a b", Value: "v"}, {Name: "ok", Value: ""}, {Name: "ok", Value: "a\nb"}} {
		if _, err := s.Set(alice, bad); errdefs.CodeOf(err) != errdefs.CodeMalformed {
			t.Errorf("Set(%q): %v", bad.Name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("the value is in %s", e.Name())
		}
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Value("alice", "OPENAI_KEY"); !ok || v != value {
		t.Errorf("Value after reopen: %q %v", v, ok)
	}
	if _, ok := s.Value("bob", "OPENAI_KEY"); ok {
		t.Error("bob reads alice's secret")
	}
	list, _ := s.List(bob, api.SecretListRequest{})
	if len(list.Secrets) != 0 {
		t.Errorf("bob lists %v", list.Secrets)
	}
	list, _ = s.List(alice, api.SecretListRequest{})
	if len(list.Secrets) != 1 || list.Secrets[0].Placeholder != api.SecretPlaceholder("OPENAI_KEY") {
		t.Errorf("alice lists %+v", list.Secrets)
	}
	if _, err := s.Delete(bob, api.SecretRequest{Name: "OPENAI_KEY"}); errdefs.CodeOf(err) != errdefs.CodeNoSecret {
		t.Errorf("bob deletes alice's secret: %v", err)
	}
	if _, err := s.Delete(alice, api.SecretRequest{Name: "OPENAI_KEY"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Value("alice", "OPENAI_KEY"); ok {
		t.Error("a deleted secret is still read")
	}
	// Another daemon's key cannot open the store.
	if err := os.WriteFile(filepath.Join(dir, keyFile), bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(alice, api.SecretSetRequest{Name: "K", Value: "v"}); err != nil {
		t.Fatal(err)
	}
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Value("alice", "K"); ok {
		t.Error("a store opened with another key reads a secret")
	}
}
