package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// fakeE2B is a fake of the daemon's E2B API and envd in front of
// fakeDaemon's REST API (the real ones need the sandbox manager, which
// needs root and runsc; integration/bench_test.go measures them): it
// checks the wire E2B's SDKs use and keeps a warm pool's counters that
// serve every create but the pool's second.
type fakeE2B struct {
	processconnect.UnimplementedProcessHandler
	t   *testing.T
	d   *fakeDaemon
	key string

	// mu guards the fields below.
	mu      sync.Mutex
	tokens  map[string]string // sandbox → envdAccessToken
	creates int
	hits    int
	starts  int
	wire    []string // what a Start request got wrong
}

func newFakeE2B(t *testing.T, key string) (*fakeE2B, *client.Client) {
	f := &fakeE2B{t: t, key: key, tokens: map[string]string{}}
	f.d = &fakeDaemon{t: t, live: map[string]bool{}}
	f.d.fake = &functionstest.Fake{CreateFunc: f.d.create, ExecFunc: f.d.exec, StopFunc: f.d.stop}
	srv := functionstest.NewServer(t, f.d.fake, httpapi.Options{Front: f.front})
	return f, client.New(srv.URL, "")
}

func (f *fakeE2B) front(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/sandboxes", f.create)
	mux.HandleFunc("DELETE /sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /metrics", f.metrics)
	path, h := processconnect.NewProcessHandler(f)
	mux.Handle(path, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			next.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeE2B) create(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(api.HeaderE2BAPIKey) != f.key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"code":401,"message":"invalid API key"}`)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["templateID"] != "python" || body["allow_internet_access"] != false {
		f.t.Errorf("create body %v, %v", body, err)
	}
	sb, _ := f.d.create(r.Context(), api.CreateRequest{Image: "python"})
	f.mu.Lock()
	f.creates++
	if f.creates != 2 {
		f.hits++
	}
	token := "token-" + sb.SandboxID
	f.tokens[sb.SandboxID] = token
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"sandboxID":%q,"envdAccessToken":%q}`, sb.SandboxID, token)
}

func (f *fakeE2B) metrics(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "hutch_warm_pool_target{image=\"python\"} 2\nhutch_warm_pool_ready{image=\"python\"} 2\n"+
		"hutch_warm_pool_claims_total{image=\"python\",result=\"hit\"} %d\n", f.hits)
}

func (f *fakeE2B) Start(_ context.Context, req *connect.Request[pb.StartRequest], out *connect.ServerStream[pb.StartResponse]) error {
	h, m := req.Header(), req.Msg
	f.mu.Lock()
	f.starts++
	id := h.Get(api.HeaderE2BSandboxID)
	for what, ok := range map[string]bool{
		"JSON codec":   h.Get("Content-Type") == "application/connect+json",
		"sandbox port": h.Get(api.HeaderE2BSandboxPort) == "49983",
		"access token": f.tokens[id] != "" && h.Get(api.HeaderE2BAccessToken) == f.tokens[id],
		"command": (m.GetProcess().GetCmd() == "/bin/bash" && slices.Equal(m.GetProcess().GetArgs(), []string{"-l", "-c", "true"})) ||
			(m.GetProcess().GetCmd() == "/bin/true" && len(m.GetProcess().GetArgs()) == 0),
		"no stdin": m.Stdin != nil && !m.GetStdin(),
	} {
		if !ok {
			f.wire = append(f.wire, what)
		}
	}
	f.mu.Unlock()
	for _, ev := range []*pb.ProcessEvent{
		{Event: &pb.ProcessEvent_Start{Start: &pb.ProcessEvent_StartEvent{Pid: 7}}},
		{Event: &pb.ProcessEvent_End{End: &pb.ProcessEvent_EndEvent{Exited: true, Status: "exit status 0"}}},
	} {
		if err := out.Send(&pb.StartResponse{Event: ev}); err != nil {
			return err
		}
	}
	return nil
}

func TestE2BScenarios(t *testing.T) {
	const key = "e2b_0123456789abcdef0123456789abcdef"
	f, c := newFakeE2B(t, key)
	sel, err := Select([]string{NameE2BExecTrue, NameE2BCreate})
	if err != nil {
		t.Fatal(err)
	}
	opts := validOptions()
	opts.E2BKey = key
	rep, err := Run(t.Context(), c, opts, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		if res.Err != "" || res.Skipped != "" || res.Latency == nil || len(res.Latency.Samples) != opts.Runs {
			t.Fatalf("%s: %+v", res.Name, res)
		}
	}
	create, exec := rep.Results[0], rep.Results[1]
	if len(exec.Baselines) != 1 || exec.Baselines[0].Latency == nil || len(exec.Baselines[0].Latency.Samples) != opts.Runs {
		t.Errorf("no REST exec beside commands.run: %+v", exec.Baselines)
	}
	// e2b-create runs first, 1 warm-up and 3 timed creates: the fake pool
	// served all but the second create, its first timed one.
	if !strings.Contains(create.Note, "2 of 3 creates served from the warm pool (runs 1 booted instead)") {
		t.Errorf("e2b-create note %q", create.Note)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| E2B commands.run('true') (envd, Connect JSON) | 3 |", "| ↳ hutch REST exec of /bin/bash -l -c true, same sandbox and rounds | 3 |",
		"| E2B Sandbox.create (warm pool) | 3 |", "E2B − REST: p50 ", "without bash (/bin/true both ways, same rounds): E2B p50 "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts != 2*(1+opts.Warmup+opts.Runs) || len(f.wire) > 0 {
		t.Errorf("%d process starts, wrong: %v", f.starts, f.wire)
	}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if len(f.d.live) != 0 {
		t.Errorf("sandboxes left: %v", f.d.live)
	}
}

func TestE2BKeyRefused(t *testing.T) {
	for _, tt := range []struct {
		name, key, want string
	}{
		{"none", "", "no E2B key given, and the daemon takes none without one (401 invalid API key): pass one of its e2b.api_keys with --e2b-key"},
		{"another", "e2b_ffffffffffffffffffffffffffffffff", "the daemon refused the E2B key (401 invalid API key): pass one of its e2b.api_keys with --e2b-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFakeE2B(t, "e2b_0123456789abcdef0123456789abcdef")
			sel, _ := Select([]string{NameE2BExecTrue})
			opts := validOptions()
			opts.E2BKey = tt.key
			rep, err := Run(t.Context(), c, opts, sel)
			if err != nil {
				t.Fatal(err)
			}
			if res := rep.Results[0]; !strings.Contains(res.Skipped, tt.want) {
				t.Errorf("result %+v, want skipped with %q", res, tt.want)
			}
		})
	}
}
