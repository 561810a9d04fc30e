package e2bapi

// The transport over functionstest's fake manager (a real one needs root
// and runsc; conformance/test/e2b-*.test.mjs drive the real daemon with
// the stock SDKs).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

const (
	aliceKey = "e2b_00112233445566778899aabbccddeeff00"
	bobKey   = "e2b_ffeeddccbbaa99887766554433221100ff"
	sbID     = functionstest.DefaultID
)

// owners is a fake whose sandboxes belong to alice: another owner's
// lookups are S002, as the manager scopes them.
func owners(state string) *functionstest.Fake {
	f := &functionstest.Fake{}
	f.GetFunc = func(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
		if auth.OwnerFrom(ctx) != "alice" || req.SandboxID != sbID {
			return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "no sandbox %s", req.SandboxID)
		}
		return api.SandboxInfo{SandboxID: sbID, Image: "python", State: state, CPUs: 1, MemoryMB: 512,
			CreatedAt: "2026-01-02T03:04:05Z", IdleTimeoutSecs: 300}, nil
	}
	return f
}

// serve is the transport over fake in front of a next handler that
// records what reached it.
func serve(t *testing.T, fake *functionstest.Fake, opts Options) (*httptest.Server, *[]*http.Request) {
	t.Helper()
	opts.Signer = testSigner(t)
	var mu sync.Mutex
	var passed []*http.Request
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		passed = append(passed, r)
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	})
	srv := httptest.NewServer(New(functions.New(functionstest.DepsOf(fake)), opts).Wrap(next))
	t.Cleanup(srv.Close)
	return srv, &passed
}

// keyed is opts with alice's and bob's keys.
func keyed(opts Options) Options {
	opts.Keys, _ = auth.NewNamed("e2b.api_keys", map[string]string{"alice": aliceKey, "bob": bobKey})
	return opts
}

func do(t *testing.T, srv *httptest.Server, method, path string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func key(k string) map[string]string { return map[string]string{api.HeaderE2BAPIKey: k} }

// statusOf is the status of method path to srv with Host host ("" for
// srv's own) and headers header.
func statusOf(t *testing.T, srv *httptest.Server, method, path, host string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestControlPlaneAuth(t *testing.T) {
	fake := owners("running")
	srv, _ := serve(t, fake, keyed(Options{}))
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no key", nil, 401},
		{"unknown key", key("e2b_" + strings.Repeat("0", 40)), 401},
		{"alice", key(aliceKey), 200},
		{"bob sees no alice sandbox", key(bobKey), 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := do(t, srv, "GET", "/sandboxes/"+sbID, tc.header, "")
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				var e errorBody
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != tc.status || e.Message == "" {
					t.Fatalf("error body %s", body)
				}
			}
		})
	}
	res, body := do(t, srv, "DELETE", "/sandboxes/"+sbID, key(bobKey), "")
	if res.StatusCode != 404 || len(fake.CallsOf("Stop")) != 0 {
		t.Fatalf("bob's kill: %d %s, stops %v", res.StatusCode, body, fake.CallsOf("Stop"))
	}
}

func TestControlPlaneWithoutKeys(t *testing.T) {
	open, _ := serve(t, &functionstest.Fake{}, Options{Open: true})
	if res, body := do(t, open, "GET", "/v2/sandboxes", nil, ""); res.StatusCode != 200 {
		t.Fatalf("open daemon: %d %s", res.StatusCode, body)
	}
	closed, _ := serve(t, &functionstest.Fake{}, Options{})
	if res, _ := do(t, closed, "GET", "/v2/sandboxes", key(aliceKey), ""); res.StatusCode != 401 {
		t.Fatalf("a daemon with api_tokens and no e2b keys answered %d", res.StatusCode)
	}
}

func TestCreate(t *testing.T) {
	fake := owners("running")
	var got api.CreateRequest
	var owner string
	fake.CreateFunc = func(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
		got, owner = req, auth.OwnerFrom(ctx)
		return api.CreateResponse{SandboxID: sbID, Image: req.Image}, nil
	}
	srv, _ := serve(t, fake, keyed(Options{Templates: map[string]string{"base": "python"}, PreviewDomain: "e2b.example.com"}))
	res, body := do(t, srv, "POST", "/v2/sandboxes", key(aliceKey),
		`{"templateID":"base","timeout":120,"metadata":{"a":"b"},"envVars":{"X":"1"},"mcp":null,"secure":true}`)
	if res.StatusCode != 201 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var ans sandboxAnswer
	_ = json.Unmarshal([]byte(body), &ans)
	if ans.SandboxID != sbID || ans.TemplateID != "base" || ans.EnvdVersion != EnvdVersion || ans.Domain != "e2b.example.com:"+srv.URL[strings.LastIndex(srv.URL, ":")+1:] {
		t.Fatalf("answer %+v", ans)
	}
	s := testSigner(t)
	if o, err := s.Owner(ans.EnvdAccessToken, sbID, kindEnvd); err != nil || o != "alice" {
		t.Fatalf("envd token: %q %v", o, err)
	}
	if o, err := s.Owner(ans.TrafficAccessToken, sbID, kindTraffic); err != nil || o != "alice" {
		t.Fatalf("traffic token: %q %v", o, err)
	}
	if owner != "alice" || got.Image != "python" || got.TimeoutSecs != 120 || got.Metadata["a"] != "b" || got.Env[0] != "X=1" {
		t.Fatalf("create got %+v as %q", got, owner)
	}
	if res, body := do(t, srv, "POST", "/v2/sandboxes", key(aliceKey), `{"timeout":"x"}`); res.StatusCode != 400 {
		t.Fatalf("bad body: %d %s", res.StatusCode, body)
	}
}

func TestListPages(t *testing.T) {
	fake := &functionstest.Fake{}
	var got api.ListRequest
	fake.ListFunc = func(_ context.Context, req api.ListRequest) (api.ListResponse, error) {
		got = req
		return api.ListResponse{Sandboxes: []api.SandboxInfo{{SandboxID: "a", State: "paused", Metadata: map[string]string{"k": "v"}}}, NextToken: "t2"}, nil
	}
	srv, _ := serve(t, fake, keyed(Options{}))
	res, body := do(t, srv, "GET", "/v2/sandboxes?limit=1&nextToken=t1&state=paused&metadata=k%3Dv", key(aliceKey), "")
	if res.StatusCode != 200 || res.Header.Get("X-Next-Token") != "t2" {
		t.Fatalf("%d %q %s", res.StatusCode, res.Header.Get("X-Next-Token"), body)
	}
	var items []listedSandbox
	_ = json.Unmarshal([]byte(body), &items)
	if len(items) != 1 || items[0].State != "paused" || items[0].Metadata["k"] != "v" {
		t.Fatalf("items %s", body)
	}
	if got.Limit != 1 || got.NextToken != "t1" || got.Metadata["k"] != "v" {
		t.Fatalf("list got %+v", got)
	}
}

func TestPauseAndConnect(t *testing.T) {
	for _, tc := range []struct {
		name, state, path string
		changed           bool
		status            int
	}{
		{"pause", "running", "/sandboxes/" + sbID + "/pause", true, 204},
		{"pause twice", "paused", "/sandboxes/" + sbID + "/pause", false, 409},
		{"connect to a running one", "running", "/v2/sandboxes/" + sbID + "/connect", false, 200},
		{"connect resumes", "paused", "/v2/sandboxes/" + sbID + "/connect", true, 201},
		{"resume", "paused", "/sandboxes/" + sbID + "/resume", true, 201},
		{"connect to a stopped one", "stopped", "/sandboxes/" + sbID + "/connect", false, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := owners(tc.state)
			fake.StateFunc = func(_ context.Context, method string, req any) (any, error) {
				switch method {
				case "SetTimeout":
					return api.SetTimeoutResponse{SandboxID: sbID}, nil
				default:
					return api.StateResponse{SandboxID: sbID, Changed: tc.changed}, nil
				}
			}
			srv, _ := serve(t, fake, keyed(Options{}))
			res, body := do(t, srv, "POST", tc.path, key(aliceKey), `{"timeout":60}`)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
		})
	}
}

func TestRouter(t *testing.T) {
	s := testSigner(t)
	token := s.Token(kindEnvd, "alice", sbID)
	inSandbox := func(port string, extra map[string]string) map[string]string {
		h := map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: port}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name, state, method, path, host string
		header                          map[string]string
		status                          int
	}{
		{"envd without a token", "running", "POST", "/process.Process/List", "", inSandbox("49983", nil), 401},
		{"envd with another sandbox's token", "running", "POST", "/process.Process/List", "",
			inSandbox("49983", map[string]string{api.HeaderE2BAccessToken: s.Token(kindEnvd, "alice", "other")}), 401},
		{"envd with the traffic token", "running", "POST", "/process.Process/List", "",
			inSandbox("49983", map[string]string{api.HeaderE2BAccessToken: s.Token(kindTraffic, "alice", sbID)}), 401},
		{"envd not wired", "running", "POST", "/process.Process/List", "", inSandbox("49983", map[string]string{api.HeaderE2BAccessToken: token}), 501},
		{"health running", "running", "GET", "/health", "", inSandbox("49983", map[string]string{api.HeaderE2BAccessToken: token}), 204},
		{"health paused", "paused", "GET", "/health", "", inSandbox("49983", map[string]string{api.HeaderE2BAccessToken: token}), 502},
		{"interpreter without a token", "running", "GET", "/contexts", "", inSandbox("49999", nil), 401},
		{"bad port", "running", "GET", "/", "", inSandbox("x", nil), 400},
		{"another port goes to the preview proxy", "running", "GET", "/x", "", inSandbox("8000", nil), 418},
		{"a foreign page", "running", "GET", "/health", "", inSandbox("49983", map[string]string{"Origin": "https://evil.example"}), 403},
		{"host of the interpreter", "running", "GET", "/contexts", "49999-" + sbID + ".e2b.example.com", nil, 401},
		{"host of another port", "running", "GET", "/", "8000-" + sbID + ".e2b.example.com", nil, 418},
		{"not E2B's", "running", "GET", "/v1/sandboxes", "", nil, 418},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, passed := serve(t, owners(tc.state), keyed(Options{PreviewDomain: "e2b.example.com"}))
			if status := statusOf(t, srv, tc.method, tc.path, tc.host, tc.header); status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if tc.name == "another port goes to the preview proxy" {
				r := (*passed)[0]
				if r.Header.Get(api.HeaderSandboxID) != sbID || r.Header.Get(api.HeaderSandboxPort) != "8000" || r.Header.Get(api.HeaderE2BSandboxID) != "" {
					t.Fatalf("passed on with %v", r.Header)
				}
			}
		})
	}
}

// TestPreviewHostIsNotE2B: under a preview host only the host decides
// (issue 33). A page a sandbox serves at 8000-{id}.localhost calls its
// own origin, which passes the web guard (a loopback name, same origin):
// on a daemon without keys or tokens E2B's control plane would act for
// the local user, and its in-sandbox headers would pick another sandbox.
// Every such request is the preview's (next), but the hosts of E2B's
// ports.
func TestPreviewHostIsNotE2B(t *testing.T) {
	s := testSigner(t)
	token := s.Token(kindEnvd, "", sbID)
	page := "8000-" + sbID + ".localhost:3111"
	inSandbox := map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: "49983", api.HeaderE2BAccessToken: token,
		"Origin": "http://" + page}
	for _, tc := range []struct {
		name, method, path, host string
		header                   map[string]string
		status                   int
	}{
		{"list", "GET", "/sandboxes", page, map[string]string{"Origin": "http://" + page}, 418},
		{"list v2", "GET", "/v2/sandboxes", page, nil, 418},
		{"get", "GET", "/sandboxes/" + sbID, page, nil, 418},
		{"create", "POST", "/v2/sandboxes", page, map[string]string{"Origin": "http://" + page}, 418},
		{"kill", "DELETE", "/sandboxes/" + sbID, page, nil, 418},
		{"in-sandbox headers", "GET", "/health", page, inSandbox, 418},
		{"in-sandbox headers to the interpreter", "GET", "/contexts", page,
			map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: "49999"}, 418},
		{"a host that names no port", "GET", "/sandboxes", "www.localhost:3111", nil, 418},
		{"the control plane on envd's host", "GET", "/sandboxes", "49983-" + sbID + ".localhost:3111", nil, 401},
		{"envd's host", "GET", "/health", "49983-" + sbID + ".localhost:3111", map[string]string{api.HeaderE2BAccessToken: token}, 204},
		{"the API's own host", "GET", "/sandboxes", "localhost:3111", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &functionstest.Fake{GetFunc: func(_ context.Context, req api.GetRequest) (api.SandboxInfo, error) {
				return api.SandboxInfo{SandboxID: req.SandboxID, Image: "python", State: "running"}, nil
			}}
			srv, passed := serve(t, fake, Options{Open: true, PreviewDomain: "localhost"})
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{"templateID":"base"}`))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			req.Host = tc.host
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.status == 418 && ((*passed)[0].Header.Get(api.HeaderSandboxID) != "" || (*passed)[0].Host != tc.host) {
				t.Fatalf("passed on as %s with %v", (*passed)[0].Host, (*passed)[0].Header)
			}
		})
	}
}

// TestTokensLiveWithTheirSandbox: a sandbox's tokens open nothing once it
// is stopped or gone (issue 33): the request is answered 502, as E2B's
// proxy answers for a sandbox that is gone, and reaches neither envd nor
// the interpreter; a paused sandbox's still do.
func TestTokensLiveWithTheirSandbox(t *testing.T) {
	s := testSigner(t)
	for _, tc := range []struct {
		state, port, path string
		status            int
	}{
		{"running", "49983", "/process.Process/List", http.StatusAccepted},
		{"paused", "49983", "/process.Process/List", http.StatusAccepted},
		{"stopped", "49983", "/process.Process/List", http.StatusBadGateway},
		{"stopped", "49983", "/files?path=/etc/hostname", http.StatusBadGateway},
		{"stopped", "49999", "/contexts", http.StatusBadGateway},
		{"gone", "49983", "/process.Process/List", http.StatusBadGateway},
	} {
		t.Run(tc.state+" "+tc.port+tc.path, func(t *testing.T) {
			fake := owners(tc.state)
			if tc.state == "gone" {
				fake.GetFunc = func(context.Context, api.GetRequest) (api.SandboxInfo, error) {
					return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "no sandbox %s", sbID)
				}
			}
			reached := false
			envd := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				reached = true
				w.WriteHeader(http.StatusAccepted)
			})
			srv, _ := serve(t, fake, keyed(Options{Envd: envd}))
			res, body := do(t, srv, "POST", tc.path, map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: tc.port,
				api.HeaderE2BAccessToken: s.Token(kindEnvd, "alice", sbID)}, "{}")
			if res.StatusCode != tc.status || (tc.status == http.StatusBadGateway && reached) {
				t.Fatalf("status %d (envd reached: %v), want %d: %s", res.StatusCode, reached, tc.status, body)
			}
		})
	}
}

// TestTokensLiveWithTheirOwnersKey: a token is good only while the owner
// it names may use the E2B API: removing an owner's key from
// e2b.api_keys revokes their tokens, and a keyless daemon's tokens (the
// local user's) open nothing once it has keys.
func TestTokensLiveWithTheirOwnersKey(t *testing.T) {
	s := testSigner(t)
	anyOwner := &functionstest.Fake{GetFunc: func(_ context.Context, req api.GetRequest) (api.SandboxInfo, error) {
		return api.SandboxInfo{SandboxID: req.SandboxID, State: "running"}, nil
	}}
	for _, tc := range []struct {
		name, owner string
		opts        Options
		status      int
	}{
		{"alice has a key", "alice", keyed(Options{}), http.StatusNoContent},
		{"carol's key was removed", "carol", keyed(Options{}), http.StatusUnauthorized},
		{"the local user's once keys are given", "", keyed(Options{Open: true}), http.StatusUnauthorized},
		{"the local user's on an open daemon", "", Options{Open: true}, http.StatusNoContent},
		{"the local user's once api_tokens are given", "", Options{}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, anyOwner, tc.opts)
			res, body := do(t, srv, "GET", "/health", map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: "49983",
				api.HeaderE2BAccessToken: s.Token(kindEnvd, tc.owner, sbID)}, "")
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
		})
	}
}

// TestDomain: create, connect and getInfo answer the domain under which
// the SDK's getHost(port), {port}-{id}.{domain}, is hutch's preview host:
// preview_domain with the port the client reached the daemon on (the
// preview hosts are on the same listener), and without preview_domain a
// name that never resolves, never E2B's own (the SDK's default when the
// answer has none, where it would send in-sandbox calls and their
// tokens).
func TestDomain(t *testing.T) {
	fake := owners("running")
	fake.CreateFunc = func(_ context.Context, req api.CreateRequest) (api.CreateResponse, error) {
		return api.CreateResponse{SandboxID: sbID, Image: req.Image}, nil
	}
	for _, tc := range []struct {
		name, previewDomain, host, want string
	}{
		{"the daemon's own port", "localhost", "127.0.0.1:3111", "localhost:3111"},
		{"a default port", "preview.example.com", "localhost", "preview.example.com"},
		{"no preview_domain", "", "127.0.0.1:3111", NoPreviewDomain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, fake, keyed(Options{PreviewDomain: tc.previewDomain}))
			for _, call := range []struct{ method, path string }{
				{"POST", "/v2/sandboxes"}, {"POST", "/v2/sandboxes/" + sbID + "/connect"}, {"GET", "/sandboxes/" + sbID},
			} {
				req, _ := http.NewRequest(call.method, srv.URL+call.path, strings.NewReader("{}"))
				req.Host = tc.host
				req.Header.Set(api.HeaderE2BAPIKey, aliceKey)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var ans struct {
					Domain *string `json:"domain"`
				}
				err = json.NewDecoder(res.Body).Decode(&ans)
				res.Body.Close()
				if err != nil || ans.Domain == nil || *ans.Domain != tc.want {
					t.Errorf("%s %s: domain %v (%v), want %q", call.method, call.path, ans.Domain, err, tc.want)
				}
			}
		})
	}
}
