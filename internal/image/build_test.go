package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestOutputLog(t *testing.T) {
	long := strings.Repeat("x", maxLineBytes+100)
	tests := []struct {
		name   string
		writes []string
		lines  []string // reported to progress
		tail   string
	}{
		{"lines", []string{"I: one\nI: two\n"}, []string{"I: one", "I: two"}, "I: one\nI: two"},
		{"split writes", []string{"I: fir", "st\nI: sec", "ond"}, []string{"I: first", "I: second"}, "I: first\nI: second"},
		{"carriage returns and blanks", []string{"(Reading 5%\r(Reading 10%\r\n\n  \nDone\n"},
			[]string{"(Reading 5%", "(Reading 10%", "Done"}, "(Reading 5%\n(Reading 10%\nDone"},
		{"long line cut", []string{long + "\n"}, []string{long[:maxLineBytes]}, long[:maxLineBytes]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			o := &outputLog{progress: func(l string) { got = append(got, l) }}
			for _, w := range tt.writes {
				if n, err := o.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if tail := o.tail(); tail != tt.tail {
				t.Errorf("tail = %q, want %q", tail, tt.tail)
			}
			if !slices.Equal(got, tt.lines) {
				t.Errorf("progress lines = %q, want %q", got, tt.lines)
			}
		})
	}
}

func TestOutputLogTailBounded(t *testing.T) {
	o := &outputLog{}
	for i := range 1000 {
		o.Write([]byte(strings.Repeat("y", i%97) + " line\n"))
	}
	o.Write([]byte("E: the end\n"))
	tail := o.tail()
	if len(tail) > maxTailBytes || len(tail) < maxTailBytes-maxLineBytes {
		t.Errorf("tail is %d bytes, want close to %d", len(tail), maxTailBytes)
	}
	if !strings.HasSuffix(tail, "\nE: the end") {
		t.Errorf("tail does not end with the last line: ...%q", tail[len(tail)-40:])
	}
}

func TestRunLogged(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		wantErr []string // substrings; none means success
	}{
		{"success", `echo "I: working" >&2; echo done`, time.Minute, nil},
		{"failure", `echo "I: working" >&2; echo "E: broken" >&2; exit 3`, time.Minute,
			[]string{"sh: exit status 3; last output:\nI: working\nE: broken"}},
		// The child sleep holds the output pipe: the whole process group
		// must be killed for Run to return.
		{"timeout kills the group", `echo "I: slow"; sleep 300 & sleep 300`, 200 * time.Millisecond,
			[]string{"signal: killed", "I: slow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			var lines []string
			start := time.Now()
			err := runLogged(ctx, []string{"sh", "-c", tt.script}, nil, func(l string) { lines = append(lines, l) })
			// Far under the sleeps' 300 s: Run did not wait for them.
			if time.Since(start) > time.Minute {
				t.Errorf("took %v", time.Since(start))
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
			}
			if len(lines) == 0 || !strings.HasPrefix(lines[0], "I: ") {
				t.Errorf("progress lines = %q", lines)
			}
		})
	}
}

func TestAddAgentMountpoint(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, rootfs, outside string)
	}{
		{"fresh", func(*testing.T, string, string) {}},
		{"existing with other modes", func(t *testing.T, rootfs, _ string) {
			mustDo(t, os.Mkdir(filepath.Join(rootfs, ".hutch"), 0o700))
			mustDo(t, os.WriteFile(filepath.Join(rootfs, ".hutch/hutch-agent"), []byte("old agent"), 0o600))
		}},
		{"directory is a symlink out", func(t *testing.T, rootfs, outside string) {
			mustDo(t, os.Symlink(outside, filepath.Join(rootfs, ".hutch")))
		}},
		{"file is a symlink out", func(t *testing.T, rootfs, outside string) {
			mustDo(t, os.Mkdir(filepath.Join(rootfs, ".hutch"), 0o755))
			mustDo(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(rootfs, ".hutch/hutch-agent")))
		}},
		{"file is a directory", func(t *testing.T, rootfs, _ string) {
			mustDo(t, os.MkdirAll(filepath.Join(rootfs, ".hutch/hutch-agent/x"), 0o755))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rootfs, outside := t.TempDir(), t.TempDir()
			mustDo(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o644))
			tt.setup(t, rootfs, outside)
			if err := addAgentMountpoint(rootfs); err != nil {
				t.Fatal(err)
			}
			dir, err := os.Lstat(filepath.Join(rootfs, ".hutch"))
			if err != nil || !dir.IsDir() || dir.Mode().Perm() != 0o755 {
				t.Errorf(".hutch = %v, %v; want a 0755 directory", dir, err)
			}
			f, err := os.Lstat(filepath.Join(rootfs, ".hutch/hutch-agent"))
			if err != nil || !f.Mode().IsRegular() || f.Mode().Perm() != 0o755 || f.Size() != 0 {
				t.Errorf("hutch-agent = %v, %v; want an empty 0755 file", f, err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "victim")); err != nil || string(b) != "keep" {
				t.Errorf("a file outside the rootfs changed: %q, %v", b, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Errorf("files appeared outside the rootfs: %v", entries)
			}
		})
	}
}

func TestTreeSizeCountsHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1000), 0o644))
	mustDo(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "sub/c"), make([]byte, 24), 0o644))
	mustDo(t, os.Symlink("a", filepath.Join(dir, "link"))) // 1 byte
	got, err := treeSize(dir)
	if err != nil || got != 1025 {
		t.Errorf("treeSize = %d, %v; want 1025", got, err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBuildAttrKillsEscapedProcesses checks that a build killed midway
// takes with it the processes that left its process group (as apt's dpkg
// does with a session of its own): none is left to write into the tree.
func TestBuildAttrKillsEscapedProcesses(t *testing.T) {
	testutil.RequiresRoot(t)
	marker := filepath.Join(t.TempDir(), "escaped")
	// A sleep no other process runs, found on the host by its arguments.
	nap := fmt.Sprintf("300.%d", time.Now().UnixNano()%1_000_000)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	script := "setsid sh -c 'touch " + marker + "; exec sleep " + nap + "' & sleep 300"
	if err := runLogged(ctx, []string{"sh", "-c", script}, buildAttr(), func(string) {}); err == nil {
		t.Fatal("a killed build reported success")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the escaped process never started: %v", err)
	}
	var left []string
	if !testutil.Poll(time.Minute, func() bool { left = sleepers(nap); return len(left) == 0 }) {
		t.Fatalf("processes outlived their build: %v", left)
	}
}

// sleepers lists the host's processes running `sleep nap`.
func sleepers(nap string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && string(b) == "sleep\x00"+nap+"\x00" {
			found = append(found, p)
		}
	}
	return found
}
