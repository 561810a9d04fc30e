package agent

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostsFile(t *testing.T) {
	lease := netip.MustParseAddr("10.200.0.2")
	for _, tc := range []struct {
		name, old, hostname string
		addr                netip.Addr
		want, never         []string
	}{
		{"no image file, no network", "", "hutch-0123abcd", netip.Addr{},
			[]string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n", "127.0.1.1\thutch-0123abcd\n"}, nil},
		{"a network: the host name at its address", "", "hutch-0123abcd", lease,
			[]string{"10.200.0.2\thutch-0123abcd\n"}, []string{"127.0.1.1"}},
		{"the image's lines follow hutch's", "10.9.8.7 image-host\n# a comment\n", "h", netip.Addr{},
			[]string{hostsEnd + "\n10.9.8.7 image-host\n# a comment\n"}, nil},
		{"an earlier block is replaced, what was added after it kept",
			hostsBegin + "\n127.0.0.1\tlocalhost\n10.200.0.6\told-name\n" + hostsEnd + "\n10.9.8.7 added\n", "new-name", lease,
			[]string{"10.200.0.2\tnew-name\n" + hostsEnd + "\n10.9.8.7 added\n"}, []string{"old-name", "10.200.0.6"}},
		{"no host name worth a line", "", "bad name\n1.2.3.4 evil", lease, []string{"localhost"}, []string{"evil", "10.200.0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(hostsFile([]byte(tc.old), tc.hostname, tc.addr))
			if !strings.HasPrefix(got, hostsBegin+"\n") || strings.Count(got, hostsBegin) != 1 || strings.Count(got, hostsEnd) != 1 {
				t.Errorf("want one block of hutch's, first:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.never {
				if strings.Contains(got, w) {
					t.Errorf("has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestWriteHosts: the file is written where none was, rewritten without
// growing, and a symlink is replaced, not written through.
func TestWriteHosts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc", "hosts")
	for range 2 {
		if err := WriteHosts(path); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), "127.0.0.1\tlocalhost\n") != 1 {
		t.Fatalf("hosts after two writes (%v):\n%s", err, b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode: %v, %v", fi, err)
	}
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteHosts(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "kept\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("hosts is not a regular file: %v, %v", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "etc", ".hosts-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
