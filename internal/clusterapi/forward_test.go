package clusterapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/kubenode"
)

func TestTopLevelSandboxID(t *testing.T) {
	cases := map[string]string{
		`{"sandbox_id":"abc","argv":["x"]}`:                "abc",
		`{"argv":["sandbox_id"],"sandbox_id":"def"}`:       "def",
		`{"nested":{"sandbox_id":"no"},"sandbox_id":"ok"}`: "ok",
		`{"nested":{"sandbox_id":"no"}}`:                   "",
		`["sandbox_id","x"]`:                               "",
		`{"sandbox_id":7}`:                                 "",
		`{"argv":["trunc`:                                  "",
	}
	for body, want := range cases {
		if got := topLevelSandboxID([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// A function call's body reaches the API whole after its sandbox_id was
// read.
func TestSandboxOfKeepsTheBody(t *testing.T) {
	body := `{"sandbox_id":"abc","content":"` + strings.Repeat("x", peekBytes) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/v1/functions/sandbox::fs::write", strings.NewReader(body))
	id, r := sandboxOf(r)
	got, _ := io.ReadAll(r.Body)
	if id != "abc" || string(got) != body {
		t.Fatalf("id %q, body of %d bytes (sent %d)", id, len(got), len(body))
	}
	if id, _ := sandboxOf(httptest.NewRequest(http.MethodGet, "/v1/sandboxes/xyz/files/a", nil)); id != "xyz" {
		t.Fatalf("a route's id: %q", id)
	}
	if id, _ := sandboxOf(httptest.NewRequest(http.MethodGet, "/v1/sandboxes", nil)); id != "" {
		t.Fatalf("the list route's id: %q", id)
	}
}

// A call that says it comes from a node is served for the owner it
// carries only with the cluster's credential.
func TestServePeer(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.PeerToken = "peer-token-0123456789abcdef"
	tokens, err := auth.New(map[string]string{"alice": "alice-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Config: cfg, Tokens: tokens})
	var served string
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, err := tokens.Owner(r)
		if err != nil || r.Header.Get(HeaderToken) != "" || r.Header.Get(HeaderOwner) != "" {
			t.Errorf("served as %q (%v), headers %v", owner, err, r.Header)
		}
		served = owner
	}))
	for tok, want := range map[string]int{"": http.StatusForbidden, "wrong": http.StatusForbidden, cfg.Cluster.PeerToken: http.StatusOK} {
		served = ""
		r := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/abc", nil)
		r.Header.Set(HeaderOwner, "alice")
		if tok != "" {
			r.Header.Set(HeaderToken, tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want || (want == http.StatusOK) != (served == "alice") {
			t.Errorf("token %q: %d (served as %q), want %d", tok, w.Code, served, want)
		}
	}
	// With the credential but no owner (a request forwarded by its
	// host), the call authenticates as any: never as the empty owner.
	h = a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, err := tokens.Owner(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, owner)
	}))
	for auth, want := range map[string]string{"": "", "Bearer alice-token-0123456789": "alice"} {
		r := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/abc", nil)
		r.Header.Set(HeaderToken, cfg.Cluster.PeerToken)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Body.String(); (want == "") != (w.Code == http.StatusUnauthorized) || (want != "" && got != want) {
			t.Errorf("no owner, Authorization %q: %d %q", auth, w.Code, got)
		}
	}
	// Without cluster.peer_token no call is taken for a node's.
	cfg.Cluster.PeerToken = ""
	b := New(Options{Config: cfg, Tokens: tokens})
	r := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/abc", nil)
	r.Header.Set(HeaderOwner, "alice")
	r.Header.Set(HeaderToken, "")
	w := httptest.NewRecorder()
	b.Wrap(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("no peer token configured: %d", w.Code)
	}
}

// A forwarded stream's events are typed as the holding node's were.
func TestDecodeEvent(t *testing.T) {
	if ev := decodeEvent(functions.EventData, json.RawMessage(`"aGk="`)); string(ev.Bytes) != "hi" || ev.Data != nil {
		t.Errorf("data: %+v", ev)
	}
	if ev := decodeEvent(api.EventStdout, json.RawMessage(`{"data":"out","offset":3}`)); ev.Data != (api.OutputChunk{Data: "out", Offset: 3}) {
		t.Errorf("stdout: %+v", ev)
	}
	if ev := decodeEvent(api.EventStart, json.RawMessage(`{"pid":9}`)); ev.Data != (api.ProcessStartResponse{Pid: 9}) {
		t.Errorf("start: %+v", ev)
	}
	if ev, ok := decodeEvent("other", json.RawMessage(`{"x":1}`)).Data.(json.RawMessage); !ok || string(ev) != `{"x":1}` {
		t.Errorf("other: %+v", ev)
	}
}

// A streaming table call for a sandbox another node holds is that node's
// stream, its events typed, its result the function's; a call that did
// not ask for a stream is its one value.
func TestForwardStream(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.PeerToken = "peer-token-0123456789abcdef"
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderToken) != cfg.Cluster.PeerToken || r.Header.Get(HeaderOwner) != "alice" || r.URL.Path != "/v1/functions/"+api.FnExecStream {
			http.Error(w, "not a node's call", http.StatusForbidden)
			return
		}
		var req api.ExecRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Argv[0] == "one-value" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"stdout":"whole"}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"type":"start","data":{"pid":4}}`+"\n"+`{"type":"stdout","data":{"data":"hi\n","offset":0}}`+"\n"+`{"type":"result","result":{"stdout":"hi\n"}}`+"\n")
	}))
	defer peer.Close()
	const id = "0f6b1c9e-2d3a-4c5b-8e7f-1a2b3c4d5e6f"
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{kubenode.AnnotationAPIURL: peer.URL}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-1", Namespace: kubenode.OwnerNamespace(cfg.Cluster.NamespacePrefix, "alice"), Labels: map[string]string{kubenode.LabelAPI: "true"}},
			Spec:   corev1.PodSpec{NodeName: "node-b"},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{ContainerID: kubenode.ContainerIDPrefix + id}}}})
	a := New(Options{Config: cfg, Local: nowhere{}})
	a.Attach(client, "node-a")
	ctx := auth.WithOwner(context.Background(), "alice")
	res, ok, err := a.ForwardStream(ctx, api.FnExecStream, api.ExecRequest{SandboxID: id, Argv: []string{"echo"}}, reflect.TypeFor[api.ExecResponse]())
	st, isStream := res.(*functions.Stream)
	if !ok || err != nil || !isStream {
		t.Fatalf("forwarded: %T %v %v", res, ok, err)
	}
	defer st.Close()
	var events []functions.Event
	for {
		ev, err := st.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 || events[0].Data != (api.ProcessStartResponse{Pid: 4}) || events[1].Data != (api.OutputChunk{Data: "hi\n"}) || st.Result().(api.ExecResponse).Stdout != "hi\n" {
		t.Fatalf("the forwarded stream: %+v, result %+v", events, st.Result())
	}
	res, ok, err = a.ForwardStream(ctx, api.FnExecStream, api.ExecRequest{SandboxID: id, Argv: []string{"one-value"}}, reflect.TypeFor[api.ExecResponse]())
	if r, isResp := res.(api.ExecResponse); !ok || err != nil || !isResp || r.Stdout != "whole" {
		t.Fatalf("one value: %+v %v %v", res, ok, err)
	}
	// A node's own call is its own.
	if _, ok, _ := a.ForwardStream(context.WithValue(ctx, fromPeerKey{}, true), api.FnExecStream, api.ExecRequest{SandboxID: id}, reflect.TypeFor[api.ExecResponse]()); ok {
		t.Fatal("a forwarded call forwarded again")
	}
}
