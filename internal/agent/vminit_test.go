package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestModuleFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"02-virtio_mmio.ko":    "",
		"00-virtio_ring.ko":    "",
		"01-virtio.ko.xz":      "",
		"03-virtio_blk.ko.zst": "",
		"README":               "",
		"sub/04-x.ko":          "",
	})
	mods, err := moduleFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []moduleFile{
		{path: filepath.Join(dir, "00-virtio_ring.ko")},
		{path: filepath.Join(dir, "01-virtio.ko.xz"), compressed: true},
		{path: filepath.Join(dir, "02-virtio_mmio.ko")},
		{path: filepath.Join(dir, "03-virtio_blk.ko.zst"), compressed: true},
	}
	if len(mods) != len(want) {
		t.Fatalf("moduleFiles = %+v, want %+v", mods, want)
	}
	for i := range want {
		if mods[i] != want[i] {
			t.Errorf("module %d = %+v, want %+v", i, mods[i], want[i])
		}
	}
	if _, err := moduleFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("moduleFiles of a missing directory: no error")
	}
}

func TestFindPortAndDisk(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"ports/vport0p0/name": "org.qemu.guest_agent.0\n",
		"ports/vport0p1/name": "hutch.agent\n",
		"ports/vport0p2/junk": "",
		"block/vda/serial":    "hutch-scratch",
		"block/vdb/serial":    "hutch-root\n",
		"block/loop0/size":    "0",
		"net/lo/mtu":          "65536",
		"net/eth0/mtu":        "1500",
		"loonly/lo/mtu":       "65536",
	})
	tests := []struct {
		name string
		find func() (string, error)
		want string
	}{
		{"port", func() (string, error) { return findPort(filepath.Join(dir, "ports"), "hutch.agent") }, "vport0p1"},
		{"missing port", func() (string, error) { return findPort(filepath.Join(dir, "ports"), "other") }, ""},
		{"no ports directory", func() (string, error) { return findPort(filepath.Join(dir, "none"), "hutch.agent") }, ""},
		{"disk", func() (string, error) { return findDisk(filepath.Join(dir, "block"), "hutch-root") }, "vdb"},
		{"missing disk", func() (string, error) { return findDisk(filepath.Join(dir, "block"), "other") }, ""},
		{"network interface", func() (string, error) { return findNetIf(filepath.Join(dir, "net")) }, "eth0"},
		{"no network interface", func() (string, error) { return findNetIf(filepath.Join(dir, "loonly")) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.find()
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestWaitFor(t *testing.T) {
	calls := 0
	got, err := waitFor("thing", time.Minute, func() (string, error) {
		calls++
		if calls < 3 {
			return "", nil
		}
		return "found", nil
	})
	if err != nil || got != "found" {
		t.Errorf("waitFor = %q, %v; want found", got, err)
	}
	if _, err := waitFor("thing", 0, func() (string, error) { return "", nil }); err == nil {
		t.Error("waitFor of nothing: no error")
	}
	boom := errors.New("boom")
	if _, err := waitFor("thing", time.Minute, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("waitFor of a failing find = %v, want %v", err, boom)
	}
}

// TestTrustEgressCA: the initramfs's CA is appended to a regular bundle
// (on a line of its own), never through a symlink, and nothing happens
// without a CA.
func TestTrustEgressCA(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	bundle := filepath.Join(root, vmspec.TrustedBundle)
	if err := os.MkdirAll(filepath.Dir(bundle), 0o755); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "egress-ca.pem")
	if err := trustEgressCA(caFile, root); err != nil {
		t.Fatalf("without a CA: %v", err)
	}
	if _, err := os.Stat(bundle); !os.IsNotExist(err) {
		t.Fatalf("without a CA, a bundle was made: %v", err)
	}
	const ca = "-----BEGIN CERTIFICATE-----\nhutch\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(caFile, []byte(ca), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symlinked bundle is left alone (and so is what it points at).
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, bundle); err != nil {
		t.Fatal(err)
	}
	if err := trustEgressCA(caFile, root); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "other" {
		t.Errorf("through a symlink: %q", b)
	}
	if err := os.Remove(bundle); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundle, []byte("IMAGE CA"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := trustEgressCA(caFile, root); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bundle); string(b) != "IMAGE CA\n"+ca {
		t.Errorf("bundle = %q", b)
	}
}
