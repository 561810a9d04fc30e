package agent_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
)

// TestExecStdio checks what a child's standard streams are: without stdin
// it reads /dev/null (at EOF at once), with stdin a pipe holding it; its
// stdout and stderr are pipes in blocking mode, as programs expect.
func TestExecStdio(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	// script prints what fds 0..2 are and their file status flags (octal),
	// then copies stdin.
	const script = `for fd in 0 1 2; do printf '%s ' "$(readlink /proc/self/fd/$fd | sed 's/:.*//')"; grep flags /proc/self/fdinfo/$fd | tr -d '\t' | sed 's/flags://'; done; cat`
	tests := []struct {
		name, stdin string
		wantFd0     string
	}{
		{name: "no stdin", wantFd0: "/dev/null"},
		{name: "stdin", stdin: "hello", wantFd0: "pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Exec(t.Context(), &agentv1.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Stdin: []byte(tt.stdin), TimeoutMs: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(resp.Stdout), "\n")
			if len(lines) != 4 || !strings.HasPrefix(lines[0], tt.wantFd0+" ") || lines[3] != tt.stdin {
				t.Fatalf("stdio of the child:\n%s\nstderr: %s", resp.Stdout, resp.Stderr)
			}
			for fd, l := range lines[:3] {
				f := strings.Fields(l)
				if len(f) != 2 {
					t.Fatalf("fd %d of the child: %q", fd, l)
				}
				if flags, err := strconv.ParseUint(f[1], 8, 32); err != nil || flags&syscall.O_NONBLOCK != 0 {
					t.Errorf("fd %d of the child has flags %s; want blocking", fd, f[1])
				}
				if fd > 0 && f[0] != "pipe" {
					t.Errorf("fd %d of the child is %q; want a pipe", fd, l)
				}
			}
		})
	}
}

// TestExecLeavesNoDescriptors runs execs with and without stdin and checks
// that the agent holds no more descriptors afterwards than before.
func TestExecLeavesNoDescriptors(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	count := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(entries)
	}
	exec := func(stdin string) {
		if _, err := c.Exec(t.Context(), &agentv1.ExecRequest{Argv: []string{"true"}, Stdin: []byte(stdin), Env: []string{"PATH=/usr/bin:/bin"}, TimeoutMs: 10_000}); err != nil {
			t.Fatal(err)
		}
	}
	exec("") // opens /dev/null once, for good
	before := count()
	for i := range 20 {
		exec(strings.Repeat("x", i%2))
	}
	if after := count(); after > before {
		t.Errorf("the agent holds %d descriptors after 20 execs, %d before", after, before)
	}
}
