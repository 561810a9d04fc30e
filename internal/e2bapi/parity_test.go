package e2bapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// parityFake is owners("running") with two snapshots, one template
// ("py") and fork and set_timeout answered.
func parityFake() (*functionstest.Fake, *[]any) {
	f := owners("running")
	var calls []any
	f.StateFunc = func(_ context.Context, method string, req any) (any, error) {
		calls = append(calls, req)
		switch method {
		case "ListSnapshots":
			return api.SnapshotListResponse{Snapshots: []api.SnapshotInfo{
				{SnapshotID: "s2", Name: "later", SandboxID: sbID, CreatedAt: "2026-01-02T00:00:00Z"},
				{SnapshotID: "s1", SandboxID: "other", CreatedAt: "2026-01-01T00:00:00Z"}}}, nil
		case "GetSnapshot":
			if id := req.(api.SnapshotRequest).SnapshotID; id == "s1" || id == "s2" {
				return api.SnapshotInfo{SnapshotID: id}, nil
			}
			return nil, errdefs.New(errdefs.CodeNoSnapshot, "no snapshot")
		case "DeleteSnapshot":
			return api.SnapshotDeleteResponse{Deleted: true}, nil
		case "GetTemplate":
			if req.(api.TemplateRequest).Name == "py" {
				return api.TemplateInfo{Name: "py", TemplateDefaults: api.TemplateDefaults{CPUs: 2, MemoryMB: 1024}, CreatedAt: "2026-01-01T00:00:00Z"}, nil
			}
			return nil, errdefs.New(errdefs.CodeNoTemplate, "no template")
		case "Fork":
			return api.ForkResponse{SandboxIDs: []string{"f1", "f2"}}, nil
		case "SetTimeout":
			return api.SetTimeoutResponse{}, nil
		}
		return nil, errdefs.Malformed("unexpected %s", method)
	}
	return f, &calls
}

func TestParityRoutes(t *testing.T) {
	fake, calls := parityFake()
	srv, _ := serve(t, fake, keyed(Options{}))
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/sandboxes/" + sbID + "/fork", `{"count":2,"timeout":60}`, 201, `"sandboxID":"f2"`},
		{"GET", "/snapshots?limit=1", "", 200, `[{"snapshotID":"s1","names":[]}]`},
		{"GET", "/snapshots?sandboxID=" + sbID, "", 200, `[{"snapshotID":"s2","names":["later"]}]`},
		{"GET", "/snapshots?name=later:default", "", 200, `"s2"`},
		{"GET", "/templates/py", "", 200, `"cpuCount":2,"memoryMB":1024`},
		{"GET", "/templates/aliases/py", "", 200, `{"public":false,"templateID":"py"}`},
		{"GET", "/templates/aliases/nope", "", 404, `"code":404`},
		{"GET", "/templates/py/tags", "", 200, `"tag":"default"`},
		{"GET", "/templates/py/other", "", 404, `"code":404`},
		{"DELETE", "/templates/later", "", 204, ``},
		{"POST", "/templates/tags", `{"target":"py:default","tags":["v2"]}`, 501, `"code":501`},
		{"GET", "/volumecontent/data/dir?path=/", "", 401, `"code":401`},
	} {
		res, body := do(t, srv, tc.method, tc.path, key(aliceKey), tc.body)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", tc.method, tc.path, res.StatusCode, body, tc.status, tc.want)
		}
	}
	var timeouts int
	for _, c := range *calls {
		if st, ok := c.(api.SetTimeoutRequest); ok && st.TimeoutSecs == 60 {
			timeouts++
		}
	}
	if timeouts != 2 {
		t.Errorf("fork's copies got %d set_timeout calls of 60s, want 2", timeouts)
	}
	// A page's next token is in X-Next-Token.
	res, _ := do(t, srv, "GET", "/snapshots?limit=1", key(aliceKey), "")
	if next := res.Header.Get("X-Next-Token"); next != "1" {
		t.Errorf("X-Next-Token %q", next)
	}
}

func TestVolumeContentToken(t *testing.T) {
	srv, _ := serve(t, owners("running"), keyed(Options{}))
	tr := &Transport{opts: Options{Signer: testSigner(t)}}
	token := tr.opts.Signer.Token(kindVolume, "alice", "data")
	for _, tc := range []struct {
		vol, token string
		status     int
	}{
		{"data", token, 404}, // past the token: the fake table has no sandbox::volume::fs::read
		{"other", token, 401},
		{"data", tr.opts.Signer.Token(kindEnvd, "alice", "data"), 401},
	} {
		res, body := do(t, srv, "GET", "/volumecontent/"+tc.vol+"/file?path=/a", map[string]string{"Authorization": "Bearer " + tc.token}, "")
		var e errorBody
		if res.StatusCode != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.vol, res.StatusCode, body, tc.status)
		}
	}
}

// TestForkTimeoutFailure: a copy whose timeout cannot be set is stopped
// and reported as that fork's error; the other is answered.
func TestForkTimeoutFailure(t *testing.T) {
	fake, _ := parityFake()
	state := fake.StateFunc
	fake.StateFunc = func(ctx context.Context, method string, req any) (any, error) {
		if st, ok := req.(api.SetTimeoutRequest); ok && st.SandboxID == "f2" {
			return nil, errdefs.Malformed("no")
		}
		return state(ctx, method, req)
	}
	srv, _ := serve(t, fake, keyed(Options{}))
	res, body := do(t, srv, "POST", "/sandboxes/"+sbID+"/fork", key(aliceKey), `{"count":2,"timeout":60}`)
	var out []forkResult
	if res.StatusCode != 201 || json.Unmarshal([]byte(body), &out) != nil || len(out) != 2 ||
		out[0].Sandbox == nil || out[0].Sandbox.SandboxID != "f1" || out[1].Error == nil || out[1].Error.Code != 400 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	stops := fake.CallsOf("Stop")
	if len(stops) != 1 || stops[0].Req.(api.StopRequest).SandboxID != "f2" {
		t.Fatalf("stops %+v", stops)
	}
}
