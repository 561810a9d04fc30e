package netplumb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedSetupReleasesID: a Setup that fails before it touches the host
// (no nft) leaves nothing, not even its claim on the sandbox id.
func TestFailedSetupReleasesID(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Options{Pool: testPool, Owner: dir, NftPath: "hutch-test-no-such-nft", LockPath: filepath.Join(dir, "lock")})
	if err != nil {
		t.Fatal(err)
	}
	sb := Sandbox{ID: "sb1", NetnsPath: filepath.Join(dir, "netns")}
	for i := range 2 {
		if _, err := n.Setup(context.Background(), sb); err == nil || !strings.Contains(err.Error(), "nft") {
			t.Fatalf("Setup %d: %v, want an error naming nft", i, err)
		}
	}
	if ids, err := n.IDs(context.Background()); err == nil && len(ids) > 0 {
		t.Errorf("IDs after failed setups = %v", ids)
	}
}
