package integration

import (
	"fmt"
	"os/exec"
	"testing"
)

// tmuxSession starts command in a detached tmux session named name, of
// cols×rows, on a server of its own (killed when t ends), and returns how
// to run a tmux command against that server (send-keys, capture-pane…);
// a failed command fails t.
func tmuxSession(t *testing.T, tmux, name string, cols, rows int, command string) func(args ...string) string {
	t.Helper()
	sock := t.TempDir() + "/tmux.sock"
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", name, "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), command)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	return run
}
