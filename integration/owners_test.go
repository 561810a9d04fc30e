package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// Owners (issue 6, item 4): with api_tokens every route but /healthz needs
// a token, and each owner sees only their own sandboxes.

const (
	aliceToken = "alice-0123456789abcdef"
	bobToken   = "bob-0123456789abcdef00"
)

func TestOwnerScoping(t *testing.T) {
	d := startDaemon(t, baseConfig("api_tokens:\n  alice: "+aliceToken+"\n  bob: "+bobToken+"\n"))
	ctx := context.Background()
	alice, bob := client.New(d.url, aliceToken), client.New(d.url, bobToken)
	d.c = alice // d.create creates as alice
	a := d.create(api.CreateRequest{Image: "python", Name: "alice-box"})
	d.c = bob
	b := d.create(api.CreateRequest{Image: "python", Name: "bob-box"})

	t.Run("credentials", func(t *testing.T) {
		tests := []struct {
			name, method, path, token string
			status                    int
			code                      string
		}{
			{"list without a token", "GET", "/v1/sandboxes", "", 401, "unauthorized"},
			{"exec without a token", "POST", "/v1/sandboxes/" + a + "/exec", "", 401, "unauthorized"},
			{"function without a token", "POST", "/v1/functions/sandbox::list", "", 401, "unauthorized"},
			{"metrics without a token", "GET", "/metrics", "", 401, "unauthorized"},
			{"wrong token", "GET", "/v1/sandboxes", "mallory-0123456789abcdef", 403, "forbidden"},
			{"a token's prefix", "GET", "/v1/sandboxes", aliceToken[:12], 403, "forbidden"},
			{"healthz is public", "GET", "/healthz", "", 200, ""},
			{"alice lists", "GET", "/v1/sandboxes", aliceToken, 200, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				body := ""
				if tt.method == "POST" {
					body = `{"cmd":"true"}`
					if strings.HasPrefix(tt.path, "/v1/functions/") {
						body = `{}`
					}
				}
				status, resp := d.raw(tt.method, tt.path, tt.token, body)
				if status != tt.status || (tt.code != "" && !strings.Contains(resp, `"code":"`+tt.code+`"`)) {
					t.Fatalf("%d %s; want %d %s", status, resp, tt.status, tt.code)
				}
			})
		}
	})

	// A background process of alice's that bob tries to reach.
	started, err := alice.StartProcess(ctx, api.ProcessStartRequest{SandboxID: a, Cmd: "sleep", Args: []string{"1000"}})
	if err != nil {
		t.Fatal(err)
	}
	alicePid := started.Pid

	t.Run("list shows only the caller's", func(t *testing.T) {
		for _, tt := range []struct {
			c          *client.Client
			own, other string
		}{{alice, a, b}, {bob, b, a}} {
			list, err := tt.c.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Sandboxes) != 1 || list.Sandboxes[0].SandboxID != tt.own {
				t.Errorf("list: %+v, want only %s", list.Sandboxes, tt.own)
			}
		}
	})

	t.Run("another owner's id is unknown", func(t *testing.T) {
		tests := []struct {
			name string
			call func() error
		}{
			{"exec", func() error { _, err := bob.Exec(ctx, api.ExecRequest{SandboxID: a, Cmd: "true"}); return err }},
			{"get", func() error { _, err := bob.Get(ctx, a); return err }},
			{"metrics", func() error { _, err := bob.Metrics(ctx, a); return err }},
			{"stop", func() error { _, err := bob.Stop(ctx, a, true); return err }},
			{"fs", func() error {
				return bob.Call(ctx, api.FnFsStat, api.FsStatRequest{SandboxID: a, Path: "/"}, nil)
			}},
			{"exec by function", func() error {
				return bob.Call(ctx, api.FnExec, api.ExecRequest{SandboxID: a, Cmd: "true"}, nil)
			}},
			{"process start", func() error {
				_, err := bob.StartProcess(ctx, api.ProcessStartRequest{SandboxID: a, Cmd: "sleep", Args: []string{"100"}})
				return err
			}},
			{"process list", func() error { _, err := bob.ListProcesses(ctx, a); return err }},
			{"process kill", func() error { _, err := bob.KillProcess(ctx, a, alicePid); return err }},
			{"process output", func() error {
				_, err := bob.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: a, Pid: alicePid})
				return err
			}},
			{"streamed exec", func() error {
				_, err := bob.ExecStream(ctx, api.ExecRequest{SandboxID: a, Cmd: "true"}, nil)
				return err
			}},
			{"terminal", func() error { _, err := bob.Terminal(ctx, a, client.TerminalOptions{}); return err }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				env := wantCode(t, tt.call(), "S002")
				if !strings.Contains(env.Message, "not found") {
					t.Errorf("message %q", env.Message)
				}
			})
		}
	})

	t.Run("CLI uses HUTCH_TOKEN", func(t *testing.T) {
		t.Setenv("HUTCH_TOKEN", bobToken)
		if _, errOut, code := d.cli("", "exec", a, "--", "true"); code != 125 || !strings.Contains(errOut, "S002") {
			t.Errorf("bob's CLI exec of alice's sandbox: code %d, stderr %q", code, errOut)
		}
		out, _, code := d.cli("", "list")
		if code != 0 || !strings.Contains(out, "bob-box") || strings.Contains(out, "alice-box") {
			t.Errorf("bob's CLI list: code %d\n%s", code, out)
		}
		t.Setenv("HUTCH_TOKEN", "")
		if _, errOut, code := d.cli("", "list"); code == 0 || !strings.Contains(errOut, "unauthorized") {
			t.Errorf("CLI without a token: code %d, stderr %q", code, errOut)
		}
	})

	// Nothing bob tried touched alice's sandbox.
	if info, err := alice.GetProcess(ctx, a, alicePid); err != nil || info.State != api.ProcessRunning {
		t.Fatalf("alice's process after bob's attempts: %+v, %v", info, err)
	}
	if r, err := alice.Exec(ctx, api.ExecRequest{SandboxID: a, Cmd: "echo", Args: []string{"still here"}}); err != nil || r.Stdout != "still here\n" {
		t.Fatalf("alice's sandbox after bob's attempts: %+v, %v", r, err)
	}
	if _, err := alice.Stop(ctx, a, true); err != nil {
		t.Fatalf("alice stops her own: %v", err)
	}
	if _, err := bob.Get(ctx, b); err != nil {
		t.Fatalf("bob's sandbox after alice's stop: %v", err)
	}
}
