package integration

import (
	"context"
	"encoding/json"
	"github.com/hutch-dev/hutch/api"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebPagesRefused drives a token-less daemon the way a web page in the
// user's browser can: through a DNS-rebound name, a cross-origin "simple
// request" (text/plain, no preflight) or a cross-site request without an
// Origin. Each is refused before any handler, so no sandbox is created;
// curl-like requests (no Origin, form content type) still work, and the
// engine WebSocket applies the same rules.
func TestWebPagesRefused(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	port := d.url[strings.LastIndex(d.url, ":")+1:]
	create := `{"image":"python"}`
	pages := []struct {
		name string
		hdr  map[string]string
		code string
	}{
		{"rebound page", map[string]string{"Host": "rebind.example:" + port, "Origin": "http://rebind.example:" + port, "Content-Type": "text/plain"}, "host_not_allowed"},
		{"foreign origin", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/json"}, "origin_not_allowed"},
		{"simple request", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, "origin_not_allowed"},
		{"cross-site without origin", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, "origin_not_allowed"},
	}
	for _, p := range pages {
		for _, path := range []string{"/v1/sandboxes", "/v1/functions/sandbox::create"} {
			status, body := d.rawHeaders("POST", path, create, p.hdr)
			if status != http.StatusForbidden || !strings.Contains(body, `"code":"`+p.code+`"`) {
				t.Errorf("%s: POST %s = %d %s, want 403 %s", p.name, path, status, body, p.code)
			}
		}
	}
	if status, body := d.rawHeaders("GET", "/healthz", "", map[string]string{"Host": "rebind.example:" + port}); status != http.StatusForbidden {
		t.Errorf("rebound /healthz = %d %s, want 403", status, body)
	}
	if list, err := d.c.List(context.Background()); err != nil || len(list.Sandboxes) != 0 {
		t.Fatalf("after the refused requests: list %+v, %v; want no sandbox", list, err)
	}

	// curl -d: no Origin, application/x-www-form-urlencoded.
	status, body := d.rawHeaders("POST", "/v1/sandboxes", create, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var created struct {
		SandboxID string `json:"sandbox_id"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &created) != nil || created.SandboxID == "" {
		t.Fatalf("curl-like create = %d %s, want 200 with a sandbox_id", status, body)
	}
	d.ids = append(d.ids, created.SandboxID)
	if status, body := d.rawHeaders("GET", "/healthz", "", map[string]string{"Host": "localhost:" + port}); status != http.StatusOK {
		t.Errorf("/healthz by localhost = %d %s, want 200", status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	enginePort := d.engineURL[strings.LastIndex(d.engineURL, ":")+1:]
	for name, opts := range map[string]*websocket.DialOptions{
		"rebound engine page":   {Host: "rebind.example:" + enginePort, HTTPHeader: http.Header{"Origin": {"http://rebind.example:" + enginePort}}},
		"foreign engine origin": {HTTPHeader: http.Header{"Origin": {"https://evil.example"}}},
		"rebound telemetry":     {Host: "rebind.example:" + enginePort},
	} {
		path := "/"
		if strings.Contains(name, "telemetry") {
			path = "/otel"
		}
		c, resp, err := websocket.Dial(ctx, d.engineURL+path, opts)
		if c != nil {
			c.CloseNow()
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: dial = %v (%v), want 403", name, err, resp)
		}
	}
	var out struct {
		Sandboxes []struct {
			SandboxID string `json:"sandbox_id"`
		} `json:"sandboxes"`
	}
	if e := dialEngine(t, d).call(api.FnList, map[string]any{}, &out); e != nil || len(out.Sandboxes) != 1 {
		t.Errorf("engine list without Origin = %+v, %v; want the one sandbox", out, e)
	}
}
