package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPackageUnit: systemd accepts the unit.
func TestPackageUnit(t *testing.T) {
	analyze := testutil.RequiresBinary(t, "systemd-analyze")
	// verify looks for the ExecStart binary: point it at a stand-in.
	dir := t.TempDir()
	unit, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "packaging", "hutch.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Delegate=yes", "KillMode=mixed", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID", "--socket /run/hutch/hutch.sock --socket-group hutch"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	stand := filepath.Join(dir, "hutch")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "hutch.service")
	if err := os.WriteFile(f, []byte(strings.ReplaceAll(string(unit), "/usr/bin/hutch", stand)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", f).CombinedOutput(); err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
