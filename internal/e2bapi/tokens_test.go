package e2bapi

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testSigner(t *testing.T) *Signer {
	t.Helper()
	s, err := NewSigner(bytes.Repeat([]byte{7}, secretBytes))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokens(t *testing.T) {
	s := testSigner(t)
	good := s.Token(kindEnvd, "alice", "sb-1")
	other, _ := NewSigner(bytes.Repeat([]byte{8}, secretBytes))
	for _, tc := range []struct {
		name, token, id string
		kinds           []string
		owner           string
		ok              bool
	}{
		{"valid", good, "sb-1", []string{kindEnvd}, "alice", true},
		{"either kind", good, "sb-1", []string{kindTraffic, kindEnvd}, "alice", true},
		{"local owner", s.Token(kindTraffic, "", "sb-1"), "sb-1", []string{kindTraffic}, "", true},
		{"another sandbox", good, "sb-2", []string{kindEnvd}, "", false},
		{"another kind", good, "sb-1", []string{kindTraffic}, "", false},
		{"another secret", other.Token(kindEnvd, "alice", "sb-1"), "sb-1", []string{kindEnvd}, "", false},
		{"owner swapped", strings.Replace(good, "YWxpY2U", "Ym9i", 1), "sb-1", []string{kindEnvd}, "", false},
		{"empty", "", "sb-1", []string{kindEnvd}, "", false},
		{"no prefix", strings.TrimPrefix(good, tokenPrefix), "sb-1", []string{kindEnvd}, "", false},
		{"too long", good + strings.Repeat("A", maxTokenBytes), "sb-1", []string{kindEnvd}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, err := s.Owner(tc.token, tc.id, tc.kinds...)
			if (err == nil) != tc.ok || owner != tc.owner {
				t.Fatalf("Owner = %q, %v; want %q, ok %v", owner, err, tc.owner, tc.ok)
			}
		})
	}
}

func TestLoadSignerKeepsItsSecret(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != secretBytes {
		t.Fatalf("secret file: %v, %v", fi, err)
	}
	b, err := LoadSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Token(kindEnvd, "o", "id") != b.Token(kindEnvd, "o", "id") {
		t.Fatal("a restart minted other tokens")
	}
	if err := os.WriteFile(filepath.Join(dir, SecretFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(dir); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
