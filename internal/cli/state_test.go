package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

func TestPauseResumeAndSetTimeout(t *testing.T) {
	fake := &functionstest.Fake{StateFunc: func(_ context.Context, method string, req any) (any, error) {
		switch method {
		case "Pause":
			return api.StateResponse{SandboxID: id, State: "paused", Changed: true}, nil
		case "Resume":
			return api.StateResponse{SandboxID: id, State: "running", Changed: true}, nil
		}
		return api.SetTimeoutResponse{SandboxID: id, ExpiresAt: "2026-11-25T23:00:00Z"}, nil
	}}
	h := newHarness(t, fake)
	for _, tt := range []struct {
		args    []string
		out     string
		method  string
		wantReq any
	}{
		{[]string{"pause", id}, id + "\n", "Pause", api.PauseRequest{SandboxID: id, Depth: "freeze"}},
		{[]string{"resume", id}, id + "\n", "Resume", api.ResumeRequest{SandboxID: id}},
		{[]string{"set-timeout", id, "90m"}, "2026-11-25T23:00:00Z\n", "SetTimeout", api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: 5400}},
	} {
		out, errOut, code := h.run("", tt.args...)
		if code != 0 || out != tt.out {
			t.Errorf("%v: code %d stdout %q stderr %q", tt.args, code, out, errOut)
		}
		calls := fake.CallsOf(tt.method)
		if len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, tt.wantReq) {
			t.Errorf("%v: calls %+v, want %+v", tt.args, calls, tt.wantReq)
		}
	}
	if out, errOut, code := h.run("", "pause", "--hibernate", id); code != 0 || out != id+"\n" {
		t.Errorf("pause --hibernate: code %d stdout %q stderr %q", code, out, errOut)
	}
	if calls := fake.CallsOf("Pause"); len(calls) != 2 || calls[1].Req.(api.PauseRequest).Depth != api.PauseHibernate {
		t.Errorf("pause --hibernate asked %+v", calls)
	}
	if _, errOut, code := h.run("", "set-timeout", id, "soon"); code != 2 || !strings.Contains(errOut, "DUR") {
		t.Errorf("set-timeout with a bad DUR: code %d stderr %q; want a usage error", code, errOut)
	}
}

func TestPausedSandboxError(t *testing.T) {
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		return api.ExecResponse{}, errdefs.New(errdefs.CodePaused, "sandbox %s is paused", id)
	}}
	_, errOut, code := newHarness(t, fake).run("", "exec", id, "--", "true")
	if code == 0 || !strings.Contains(errOut, "S005") {
		t.Errorf("exec on a paused sandbox: code %d stderr %q; want S005", code, errOut)
	}
}

func TestListFilter(t *testing.T) {
	fake := &functionstest.Fake{}
	out, errOut, code := newHarness(t, fake).run("", "list", "--state", "paused,running", "--metadata", "team=red")
	if code != 0 {
		t.Fatalf("list: code %d stdout %q stderr %q", code, out, errOut)
	}
	want := api.ListRequest{State: []string{"paused", "running"}, Metadata: map[string]string{"team": "red"}}
	if calls := fake.CallsOf("List"); len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, want) {
		t.Errorf("list calls %+v, want %+v", calls, want)
	}
}
