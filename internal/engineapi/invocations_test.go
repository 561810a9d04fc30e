package engineapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestInvocationBudget: alice runs her share of invocations over two
// sessions (each under its own MaxInFlight); her next one is refused with
// too_many_invocations naming engine_max_invocations_per_owner, while bob's runs.
// Once hers end, she can invoke again.
func TestInvocationBudget(t *testing.T) {
	as, block := twoOwners(t, Options{MaxInFlight: 2, MaxInvocations: 8, MaxInvocationsPerOwner: 3})
	a1, a2, b := as(alice), as(alice), as(bob)
	slow := map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "sleep"}
	quick := map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "quick"}
	a1.invoke("1", api.FnExec, slow)
	a1.invoke("2", api.FnExec, slow)
	a1.alive() // a session reads in order: 1 and 2 hold their share now
	a2.invoke("3", api.FnExec, slow)
	// Ordered after 3 on its connection: refused once 3 holds the last
	// of alice's share.
	m := a2.call("4", api.FnExec, slow)
	e, _ := m["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != "too_many_invocations" || !strings.Contains(msg, "engine_max_invocations_per_owner") {
		t.Fatalf("alice's fourth invocation = %v, want too_many_invocations naming engine_max_invocations_per_owner", m)
	}
	if m := b.call("5", api.FnExec, quick); m["error"] != nil {
		t.Fatalf("bob's invocation beside alice's = %v", m)
	}
	close(block)
	for _, want := range []*wsClient{a1, a1, a2} {
		if m := want.recv(); m["type"] != "invocationresult" {
			t.Fatalf("an answer of alice's = %v", m)
		}
	}
	if m := a2.call("6", api.FnExec, quick); m["error"] != nil {
		t.Fatalf("alice's invocation once hers ended = %v", m)
	}
}

// TestInvocationPayloadBudget: a running invocation holds its payload's
// bytes in the body budget the REST API shares. Alice's second large
// payload while her first runs is refused with hutch's capacity S-code
// naming request_body_budget_per_owner_mb, bob's runs beside it, and once
// hers ends she can send it again.
func TestInvocationPayloadBudget(t *testing.T) {
	bodies := httpapi.NewBodyBudget(2<<20, 1<<20)
	as, block := twoOwners(t, Options{BodyBudget: bodies})
	a, b := as(alice), as(bob)
	big := func(cmd string) map[string]any {
		return map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": cmd, "stdin": strings.Repeat("x", 700<<10)}
	}
	a.invoke("1", api.FnExec, big("sleep"))
	m := a.call("2", api.FnExec, big("quick"))
	e, _ := m["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, `"code":"`+string(errdefs.CodeCapacity)+`"`) || !strings.Contains(msg, "request_body_budget_per_owner_mb") {
		t.Fatalf("alice's second large invocation = %v, want %s naming request_body_budget_per_owner_mb", m, errdefs.CodeCapacity)
	}
	if m := b.call("3", api.FnExec, big("quick")); m["error"] != nil {
		t.Fatalf("bob's large invocation beside alice's = %v", m)
	}
	close(block)
	if m := a.recv(); m["type"] != "invocationresult" {
		t.Fatalf("alice's first answer = %v", m)
	}
	if m := a.call("4", api.FnExec, big("quick")); m["error"] != nil {
		t.Fatalf("alice's large invocation once hers ended = %v", m)
	}
	// An answer is sent before its invocation gives its bytes back.
	testutil.Eventually(t, 10*time.Second, func() bool { return bodies.Used() == 0 },
		"the budget still holds bytes after every invocation ended")
}

// The tokens of twoOwners' owners.
const alice, bob = "alice-token-0123456789", "bob-token-0123456789xx"

// twoOwners serves opts with the tokens of alice and bob, and an exec
// whose cmd "sleep" runs until block is closed (or its context ends) while
// any other answers at once; as dials a session with a token.
func twoOwners(t *testing.T, opts Options) (as func(token string) *wsClient, block chan struct{}) {
	t.Helper()
	tokens, err := auth.New(map[string]string{"alice": alice, "bob": bob})
	if err != nil {
		t.Fatal(err)
	}
	block = make(chan struct{})
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, r api.ExecRequest) (api.ExecResponse, error) {
		if r.Cmd == "sleep" {
			select {
			case <-block:
			case <-ctx.Done():
			}
		}
		return api.ExecResponse{}, ctx.Err()
	}}
	opts.Auth = tokens
	_, url := testServer(t, fake, opts)
	return func(tok string) *wsClient {
		return dialWith(t, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	}, block
}
