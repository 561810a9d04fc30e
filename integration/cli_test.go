package integration

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// TestCLIPaperCuts drives the CLI as a new user would, on one daemon: the
// backlog of `hutch logs -f`, a shell fed by a pipe, names and id
// prefixes, sizes and durations in flags, bounded downloads.
func TestCLIPaperCuts(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", Name: "papercut"})
	hutch, _ := binaries(t)
	ctx := context.Background()

	t.Run("logs -f prints the backlog oldest process first", func(t *testing.T) {
		const n = 8
		for i := 1; i <= n; i++ {
			// Each writes its line, then waits: the line is backlog when
			// logs -f starts.
			if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: fmt.Sprintf("bg%d", i),
				Argv: []string{"sh", "-c", fmt.Sprintf("echo line%d; exec sleep 600", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if !eventually(time.Minute, func() bool {
			out, _, code := d.cli("", "logs", "--tag", fmt.Sprintf("bg%d", n), id)
			return code == 0 && strings.Contains(out, fmt.Sprintf("line%d", n))
		}) {
			t.Fatal("the last process never wrote its line")
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(lctx, hutch, "logs", "-f", id)
		cmd.Env = append(cmd.Environ(), "HUTCH_URL="+d.url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		var got []string
		for sc := bufio.NewScanner(out); len(got) < n && sc.Scan(); {
			if _, line, ok := strings.Cut(sc.Text(), " | "); ok && strings.HasPrefix(line, "line") {
				got = append(got, line)
			}
		}
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("line%d", i+1)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("logs -f printed the backlog as %q, want %q", got, want)
		}
	})
}
