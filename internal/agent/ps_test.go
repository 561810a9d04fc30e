package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestReadProcsShowsAChild(t *testing.T) {
	cmd := exec.Command("sleep", "30.5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Until the child has exec'd sleep (a busy machine may take a while),
	// it is the test binary's copy, or has no memory yet.
	var child *agentv1.PsEntry
	var err error
	if !testutil.Poll(30*time.Second, func() bool {
		var entries []*agentv1.PsEntry
		if entries, err = readProcs("/proc", os.Getpid(), agentv1.MaxPsEntries); err != nil {
			return true
		}
		child = nil
		for _, e := range entries {
			if e.GetPid() == int32(os.Getpid()) {
				t.Errorf("the reader itself is listed: %v", e)
			}
			if e.GetPid() == int32(cmd.Process.Pid) {
				child = e
			}
		}
		return child != nil && child.GetCommand() == "sleep 30.5" && child.GetRssBytes() != 0
	}) {
		t.Fatalf("child %d never listed as sleep with memory: %v", cmd.Process.Pid, child)
	}
	if err != nil {
		t.Fatal(err)
	}
	if child.GetPpid() != int32(os.Getpid()) || child.GetCommand() != "sleep 30.5" || child.GetUid() != uint32(os.Getuid()) ||
		child.GetRssBytes() == 0 || child.GetState() == "" {
		t.Fatalf("child entry %v", child)
	}
	if few, _ := readProcs("/proc", os.Getpid(), 1); len(few) != 1 {
		t.Fatalf("a bound of 1 gave %d entries", len(few))
	}
}

func TestParseStatTakesTheNameToTheLastParenthesis(t *testing.T) {
	line := "42 (a) (b c) R 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1000 1000000 300 18446744073709551615"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{comm: "a) (b c", state: "R", ppid: 7, cpuTicks: 300, startTicks: 1000, rssPages: 300}
	if st != want {
		t.Fatalf("parsed %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "42 no name", "42 (x) S 1 2"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCommandIsBoundedText(t *testing.T) {
	if got := command([]byte("python3\x00-c\x00pass\x00"), "python3"); got != "python3 -c pass" {
		t.Errorf("command %q", got)
	}
	if got := command(nil, "kworker"); got != "[kworker]" {
		t.Errorf("no cmdline: %q", got)
	}
	long := command([]byte(strings.Repeat("é", agentv1.MaxPsCommand)), "x")
	if len(long) > agentv1.MaxPsCommand || !strings.HasPrefix(long, "é") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long command: %d bytes", len(long))
	}
	if got := command([]byte("a\xffb"), "x"); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

func TestUserNames(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	data := "root:x:0:0:root:/root:/bin/bash\nbad line\napp:x:1000:1000::/home/app:/bin/sh\ndup:x:1000:1000::/:/bin/sh\n" +
		strings.Repeat("n", agentv1.MaxPsUserBytes+1) + ":x:7:7::/:/bin/sh\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got := userNames(p)
	if len(got) != 2 || got[0] != "root" || got[1000] != "app" {
		t.Fatalf("users %v", got)
	}
	if len(userNames(filepath.Join(t.TempDir(), "none"))) != 0 {
		t.Fatal("a missing passwd gave names")
	}
}
