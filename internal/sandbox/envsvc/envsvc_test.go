package envsvc

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestEnvService(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	sb := sbs.Add("alice", "PATH=/usr/bin", "LANG=C")
	sb.Own = []string{"FROM_CREATE=1"}
	s := New(&sbs)
	ctx := auth.WithOwner(context.Background(), "alice")
	id := sb.ID

	if _, err := s.SetEnv(ctx, api.EnvSetRequest{SandboxID: id, Env: api.Env{"GREETING=hello world", "FROM_CREATE=2"}}); err != nil {
		t.Fatal(err)
	}
	v, err := s.GetEnv(ctx, api.EnvGetRequest{SandboxID: id, Key: "FROM_CREATE"})
	if err != nil || !v.Set || v.Value != "2" {
		t.Errorf("env::get: %+v, %v", v, err)
	}
	list, err := s.ListEnv(ctx, api.EnvListRequest{SandboxID: id})
	if err != nil || list.SandboxID != id || list.Env["GREETING"] != "hello world" || list.Effective["PATH"] != "/usr/bin" || list.Env["PATH"] != "" {
		t.Errorf("env::list: %+v, %v", list, err)
	}
	// Deleting a variable of the image's env brings back the image's value.
	if _, err := s.SetEnv(ctx, api.EnvSetRequest{SandboxID: id, Env: api.Env{"LANG=en"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.DeleteEnv(ctx, api.EnvDeleteRequest{SandboxID: id, Keys: []string{"GREETING", "LANG"}})
	if err != nil || resp.Effective["LANG"] != "C" {
		t.Fatalf("env::delete: %+v, %v", resp, err)
	}
	if v, _ := s.GetEnv(ctx, api.EnvGetRequest{SandboxID: id, Key: "GREETING"}); v.Set {
		t.Errorf("env::get of a deleted variable: %+v", v)
	}
	if strings.Join(sb.Own, ",") != "FROM_CREATE=2" {
		t.Errorf("own layer after the changes: %q", sb.Own)
	}

	for _, bad := range []api.EnvSetRequest{
		{SandboxID: id},
		{SandboxID: id, Env: api.Env{"1BAD=x"}},
		{SandboxID: id, Env: api.Env{"NOEQUALS"}},
		{SandboxID: id, Env: api.Env{"BIG=" + strings.Repeat("x", MaxBytes)}},
	} {
		_, err := s.SetEnv(ctx, bad)
		wantCode(t, err, errdefs.CodeMalformed)
	}
	_, err = s.DeleteEnv(ctx, api.EnvDeleteRequest{SandboxID: id, Keys: []string{"a-b"}})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = s.DeleteEnv(ctx, api.EnvDeleteRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = s.GetEnv(ctx, api.EnvGetRequest{SandboxID: id, Key: "a b"})
	wantCode(t, err, errdefs.CodeMalformed)
	if strings.Join(sb.Own, ",") != "FROM_CREATE=2" {
		t.Errorf("refused changes changed the env: %q", sb.Own)
	}

	_, err = s.SetEnv(auth.WithOwner(context.Background(), "bob"), api.EnvSetRequest{SandboxID: id, Env: api.Env{"X=1"}})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = s.ListEnv(ctx, api.EnvListRequest{SandboxID: "nope"})
	wantCode(t, err, errdefs.CodeMalformed)

	// A paused sandbox's env may change (later execs after a resume see
	// it); an ended one's may not.
	sb.State = sandbox.Paused
	if _, err := s.SetEnv(ctx, api.EnvSetRequest{SandboxID: id, Env: api.Env{"P=1"}}); err != nil {
		t.Errorf("env::set on a paused sandbox: %v", err)
	}
	sb.State = sandbox.Stopped
	_, err = s.ListEnv(ctx, api.EnvListRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeStopped)

	if n := sbs.Held(); n != 0 {
		t.Errorf("%d handles not released", n)
	}
}
