package cli

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

func TestTriggerPayload(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  api.CreateRequest
		check func(t *testing.T, got api.CreateRequest)
	}{
		{
			name: "strings numbers and booleans",
			args: []string{"image=python", "cpus=2", "network=true", "name=my box"},
			want: api.CreateRequest{Image: "python", CPUs: 2, Network: true, Name: "my box"},
		},
		{
			name: "arrays and objects are JSON",
			args: []string{"image=python", `env=["A=1","B=2"]`},
			want: api.CreateRequest{Image: "python", Env: api.Env{"A=1", "B=2"}},
		},
		{
			name: "pairs override --json",
			args: []string{"--json", `{"image":"node","memory_mb":256,"env":{"LANG":"C.UTF-8"}}`, "image=python"},
			want: api.CreateRequest{Image: "python", MemoryMB: 256, Env: api.Env{"LANG=C.UTF-8"}},
		},
		{
			name: "what is not JSON is a string",
			args: []string{"image=python:3", "name=0644"},
			want: api.CreateRequest{Image: "python:3", Name: "0644"},
		},
		{
			name: "quoted JSON string",
			args: []string{`image="true"`, "name="},
			want: api.CreateRequest{Image: "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			h := newHarness(t, fake)
			out, errOut, code := h.run("", append([]string{"trigger", api.FnCreate}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			calls := fake.Calls()
			if len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, tt.want) {
				t.Fatalf("calls = %+v, want Create %+v", calls, tt.want)
			}
			var res api.CreateResponse
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.SandboxID != id {
				t.Fatalf("stdout %q is not the create result (%v)", out, err)
			}
		})
	}
}

func TestTriggerErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		setup    func(f *functionstest.Fake)
		wantExit int
		wantErr  string // in stderr
		wantCode string // of the envelope on stderr
	}{
		{
			name: "sandbox error prints the envelope",
			args: []string{"trigger", api.FnExec, "sandbox_id=" + id, "cmd=echo"},
			setup: func(f *functionstest.Fake) {
				f.ExecFunc = func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
					return api.ExecResponse{}, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", id)
				}
			},
			wantExit: 1, wantCode: "S002",
		},
		{
			name:     "unknown function",
			args:     []string{"trigger", "sandbox::nope"},
			wantExit: 1, wantCode: "function_not_found",
		},
		{
			name:     "unknown field",
			args:     []string{"trigger", api.FnCreate, "image=python", "bogus=1"},
			wantExit: 1, wantCode: "S001",
		},
		{name: "no function", args: []string{"trigger"}, wantExit: 2, wantErr: "requires at least 1 arg"},
		{name: "not a pair", args: []string{"trigger", api.FnList, "python"}, wantExit: 2, wantErr: `"python" is not KEY=VALUE`},
		{name: "empty key", args: []string{"trigger", api.FnList, "=1"}, wantExit: 2, wantErr: "is not KEY=VALUE"},
		{name: "--json not an object", args: []string{"trigger", api.FnList, "--json", "[1]"}, wantExit: 2, wantErr: "--json must be a JSON object"},
		{name: "--json not JSON", args: []string{"trigger", api.FnList, "--json", "{image: python}"}, wantExit: 2, wantErr: "--json must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			if tt.setup != nil {
				tt.setup(fake)
			}
			h := newHarness(t, fake)
			out, errOut, code := h.run("", tt.args...)
			if code != tt.wantExit || out != "" {
				t.Fatalf("exit %d stdout %q stderr %q, want exit %d and no stdout", code, out, errOut, tt.wantExit)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("stderr %q, want %q", errOut, tt.wantErr)
			}
			if tt.wantCode != "" {
				var env api.ErrorEnvelope
				if err := json.Unmarshal([]byte(errOut), &env); err != nil || env.Code != tt.wantCode || env.DocsURL == "" {
					t.Fatalf("stderr %q is not an envelope with code %s (%v)", errOut, tt.wantCode, err)
				}
			}
		})
	}
}

func TestTriggerUnreachable(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	h.env["HUTCH_URL"], _ = closedURL(t)
	_, errOut, code := h.run("", "trigger", api.FnList)
	if code != 1 || !strings.Contains(errOut, "no daemon at") {
		t.Fatalf("exit %d stderr %q, want 1 and the no-daemon hint", code, errOut)
	}
}
