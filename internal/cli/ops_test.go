package cli

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestDoctorFails: a port held by another program and binaries that do
// not exist are FAIL lines with a fix, and the exit status is 1.
func TestDoctorFails(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(t.TempDir(), "none")
	out, _, code := h.run("", "doctor", "--listen", ln.Addr().String(), "--engine-listen", "", "--data-dir", t.TempDir(),
		"--runsc-path", missing, "--agent-path", missing)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailure, out)
	}
	for _, want := range []string{"FAIL  port " + ln.Addr().String(), "FAIL  runsc", "FAIL  hutch-agent", "fix: ", "hutch cannot run here yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, check := range []string{"kernel", "seccomp", "cgroups", "nftables", "user namespaces", "kvm", "disk space", "filesystem", "memory", "image cache"} {
		if !strings.Contains(out, "  "+check+" ") {
			t.Errorf("no %s check:\n%s", check, out)
		}
	}
}

// TestVersion names the client's build and says when no daemon answers.
func TestVersion(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	missing := filepath.Join(t.TempDir(), "none")
	out, stderr, code := h.run("", "version", "--runsc-path", missing, "--agent-path", missing)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"client:  hutch " + Version + " (", "go1.", "daemon:  hutch", "gvisor:  ", "agent:   "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	h.env["HUTCH_URL"] = "http://127.0.0.1:1"
	if out, _, _ := h.run("", "version"); !strings.Contains(out, "daemon:  not reachable at http://127.0.0.1:1") {
		t.Errorf("without a daemon:\n%s", out)
	}
}

// TestManAndCompletion: man pages for every command, and completions
// that complete the commands (the bash script parses).
func TestManAndCompletion(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	dir := t.TempDir()
	if _, stderr, code := h.run("", "man", "--dir", dir); code != 0 {
		t.Fatalf("man: exit %d: %s", code, stderr)
	}
	for _, page := range []string{"hutch.1", "hutch-serve.1", "hutch-doctor.1", "hutch-version.1"} {
		raw, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(raw), ".SH NAME") {
			t.Errorf("%s: %v, %.80q", page, err, raw)
		}
	}
	out, _, code := h.run("", "__complete", "doc")
	if code != 0 || !strings.Contains(out, "doctor") {
		t.Errorf("__complete doc: exit %d\n%s", code, out)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := h.run("", "completion", shell)
		if code != 0 || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d %s\n%.200s", shell, code, stderr, out)
		}
		if shell == "bash" {
			bash := testutil.RequiresBinary(t, "bash")
			f := filepath.Join(dir, "hutch.bash")
			if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			if msg, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("bash -n of the completion: %v: %s", err, msg)
			}
		}
	}
}
