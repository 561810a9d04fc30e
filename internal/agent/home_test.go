package agent

import (
	"os"
	"path/filepath"
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

func TestPasswdHome(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	body := "root:x:0:0:root:/root:/bin/bash\nbroken:x:7\nuser:x:1000:1000::/home/user:/bin/sh\nagain:x:1000:1000::/elsewhere:/bin/sh\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[uint32]string{0: "/root", 1000: "/home/user", 7: "", 42: ""} {
		if got := passwdHome(p, uid); got != want {
			t.Errorf("passwdHome(%d) = %q, want %q", uid, got, want)
		}
	}
	if got := passwdHome(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("a missing file gave %q", got)
	}
}

func TestHomeDir(t *testing.T) {
	// A uid no passwd file has: the home is the env's last HOME.
	const nobody = 4_000_000_000
	req := &agentv1.ExecRequest{SetUser: true, Uid: nobody, Env: []string{"HOME=/first", "HOME=/h"}}
	for dir, want := range map[string]string{"~": "/h", "~/a/b": "/h/a/b", "~/../etc": "/etc", "/abs": "/abs", "~x": "~x"} {
		got, ok := homeDir(req, dir)
		if !ok || got != want {
			t.Errorf("homeDir(%q) = %q, %v; want %q", dir, got, ok, want)
		}
	}
	for _, env := range [][]string{nil, {"HOME=relative"}} {
		req := &agentv1.ExecRequest{SetUser: true, Uid: nobody, Env: env}
		if got, ok := homeDir(req, "~"); ok {
			t.Errorf("env %q: homeDir = %q, want no home", env, got)
		}
	}
}
