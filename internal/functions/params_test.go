package functions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestParamsSetTheTypedRequest(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		req     any
		payload string
		p       Params
		want    any
		wantErr string
	}{
		{"sandbox id", &api.ExecRequest{Cmd: "ls"}, `{"cmd":"ls"}`, Params{SandboxID: "a"}, &api.ExecRequest{SandboxID: "a", Cmd: "ls"}, ""},
		{"same id in the body", &api.GetRequest{SandboxID: "a"}, `{"sandbox_id":"a"}`, Params{SandboxID: "a"}, &api.GetRequest{SandboxID: "a"}, ""},
		{"other id in the body", &api.GetRequest{SandboxID: "b"}, `{"sandbox_id":"b"}`, Params{SandboxID: "a"}, nil, `sandbox_id in the body ("b") does not match the URL ("a")`},
		{"empty id in the body", &api.GetRequest{}, `{"sandbox_id":""}`, Params{SandboxID: "a"}, nil, `sandbox_id in the body ("") does not match`},
		{"name", &api.ImagePullRequest{}, ``, Params{Name: "python"}, &api.ImagePullRequest{Name: "python"}, ""},
		{"wait and id", &api.StopRequest{}, `{}`, Params{SandboxID: "a", Wait: &yes}, &api.StopRequest{SandboxID: "a", Wait: true}, ""},
		{"wait false in the body", &api.StopRequest{}, `{"wait":false}`, Params{Wait: &yes}, nil, "wait in the body (false) does not match the URL (true)"},
		{"a field the request has not", &api.ListRequest{}, `{}`, Params{SandboxID: "a"}, nil, "has no sandbox_id field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.apply(tt.req, json.RawMessage(tt.payload))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(tt.req)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Fatalf("request = %s, want %s", g, w)
			}
		})
	}
}

// TestParamsThroughCall: the fields reach the manager through Call, and a
// conflict is S001 that reaches nothing.
func TestParamsThroughCall(t *testing.T) {
	f := &fakeSandboxes{}
	tab := New(Deps{Sandboxes: f})
	_, err := tab.Call(context.Background(), api.FnCreate, json.RawMessage(`{"image":"python"}`), Params{})
	if err != nil || f.create.Image != "python" {
		t.Fatalf("create: %v, %+v", err, f.create)
	}
	_, err = tab.Call(context.Background(), api.FnStop, json.RawMessage(`{"sandbox_id":"b"}`), Params{SandboxID: "a"})
	if !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Fatalf("conflicting stop: %v, want S001", err)
	}
}

func TestTimeoutOptionNeedsATimedOutResult(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a timeout option on a result that cannot time out was accepted")
		}
	}()
	tab := &Table{fns: map[string]Function{}}
	add(tab, "x::y", "", func(context.Context, api.ListRequest) (api.ListResponse, error) {
		return api.ListResponse{}, nil
	}, WithTimeouts(TimeoutIsError))
}

// TestObserverSeesEveryKind: single calls, decode failures and streams
// are each reported once.
func TestObserverSeesEveryKind(t *testing.T) {
	obs := &recorder{}
	tab := New(Deps{Sandboxes: &fakeSandboxes{}, Files: &filesFake{data: []byte("x")}, Observer: obs})
	ctx := waitCtx(t)
	tab.Call(ctx, api.FnList, nil, Params{})
	tab.Call(ctx, api.FnList, json.RawMessage(`{"bogus":1}`), Params{})
	res, _ := tab.Call(ctx, api.FnFsDownload, json.RawMessage(`{"path":"/missing"}`), Params{})
	st := res.(*Stream)
	st.Next(ctx)
	st.Close()
	// hutch::exec is sandbox::exec with another timeout rule: one name.
	tab.Call(ctx, api.FnExecResult, json.RawMessage(`{"cmd":"true"}`), Params{SandboxID: "x"})
	tab.Call(ctx, api.FnExecResult, json.RawMessage(`{"bogus":1}`), Params{})
	want := "sandbox::list:ok sandbox::list:S001 sandbox::fs::download:S211 sandbox::exec:ok sandbox::exec:S001"
	if got := obs.String(); got != want {
		t.Fatalf("observed %q, want %q", got, want)
	}
}

type recorder struct{ calls []string }

func (r *recorder) Called(id string, err error) {
	res := "ok"
	if err != nil {
		res = string(errdefs.As(err).Code)
	}
	r.calls = append(r.calls, id+":"+res)
}

func (r *recorder) String() string { return strings.Join(r.calls, " ") }
