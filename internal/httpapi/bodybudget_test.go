package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestBodyBudget: alice holds most of her share of the body budget with a
// request whose body is still arriving; her next large request is refused
// with S400 naming request_body_budget_per_owner_mb, while bob's goes
// through. Once alice's first request ends, her bytes are given back.
func TestBodyBudget(t *testing.T) {
	tokens, err := auth.New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	const share, total = 1 << 20, 4 << 20
	bodies := httpapi.NewBodyBudget(total, share)
	srv := httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})),
		httpapi.Options{Auth: tokens, BodyBudget: bodies}))
	defer srv.Close()
	// exec is a body of about n bytes for sandbox::exec.
	exec := func(n int) string {
		return `{"cmd":"echo ` + strings.Repeat("a", n) + `"}`
	}
	post := func(tok string, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+"/v1/sandboxes/"+id+"/exec", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// alice's slow request: 900 KiB sent, the rest held back.
	pr, pw := io.Pipe()
	defer pw.Close() // before the server's Close, on failure too
	slow := make(chan int, 1)
	go func() {
		code, _ := post(aliceTok, pr)
		slow <- code
	}()
	head := exec(900 << 10)
	if _, err := pw.Write([]byte(head[:len(head)-10])); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return bodies.Used() >= 900<<10 }, "alice's slow body to be read")

	code, body := post(aliceTok, strings.NewReader(exec(300<<10)))
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &env)
	if code != http.StatusTooManyRequests || env.Error.Code != "S400" || !strings.Contains(env.Error.Message, "request_body_budget_per_owner_mb") {
		t.Fatalf("alice's second request: %d %s, want 429 S400 naming request_body_budget_per_owner_mb", code, body)
	}
	if code, body := post(bobTok, strings.NewReader(exec(300<<10))); code != http.StatusOK {
		t.Fatalf("bob's request beside alice's: %d %s", code, body)
	}
	if _, err := pw.Write([]byte(head[len(head)-10:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-slow; code != http.StatusOK {
		t.Fatalf("alice's slow request: %d", code)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return bodies.Used() == 0 }, "the budget to be given back")
	if code, body := post(aliceTok, strings.NewReader(exec(300<<10))); code != http.StatusOK {
		t.Fatalf("alice's request after hers ended: %d %s", code, body)
	}
}
