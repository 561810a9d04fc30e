package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPreviewPrivateAndMaskedHost (issue 37): E2B's network.allowPublicTraffic
// false and maskRequestHost on a real sandbox. Its port answers 403 without
// the sandbox's trafficAccessToken (and with another token), is served with
// it (not exposed), and the server sees the masked Host; under hutch's own
// rules the owner reaches it once exposed, with the masked Host too, and it
// cannot be made public. A create with a bad host_header makes nothing.
// sandbox::get and getInfo answer the terms; they hold after a hibernation
// and its wake, and in a fork (with the copy's own traffic token).
func TestPreviewPrivateAndMaskedHost(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()

	_, err := d.c.Create(ctx, api.CreateRequest{Image: "python", Preview: &api.PreviewOptions{HostHeader: "bad host\r\nx: y"}})
	wantCode(t, err, "S001")
	if list, err := d.c.List(ctx); err != nil || len(list.Sandboxes) != 0 {
		t.Fatalf("a refused create left %+v (%v)", list, err)
	}

	status, body := d.raw("POST", "/v2/sandboxes", "", `{"templateID":"base","timeout":300,"network":{"allowPublicTraffic":false,"maskRequestHost":"custom-host.example.com:${PORT}"}}`)
	if status != http.StatusCreated {
		t.Fatalf("E2B create: %d %s", status, body)
	}
	var sb struct{ SandboxID, TrafficAccessToken, EnvdAccessToken string }
	if err := json.Unmarshal([]byte(body), &sb); err != nil || sb.TrafficAccessToken == "" {
		t.Fatalf("E2B create answered %s (%v)", body, err)
	}
	d.ids = append(d.ids, sb.SandboxID)
	t.Cleanup(func() { _, _ = d.c.Stop(context.Background(), sb.SandboxID, true) })
	// The server answers the Host and whether a traffic token reached it.
	server := `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = (self.headers.get('Host', '') + '|' + self.headers.get('E2B-Traffic-Access-Token', '')).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('0.0.0.0', 8080), H).serve_forever()`
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.SandboxID, Tag: "web", Argv: []string{"python3", "-c", server}}); err != nil {
		t.Fatal(err)
	}
	e2b := func(token string) map[string]string {
		h := map[string]string{"E2b-Sandbox-Id": sb.SandboxID, "E2b-Sandbox-Port": "8080"}
		if token != "" {
			h[api.HeaderE2BTrafficToken] = token
		}
		return h
	}
	// With the token: served (the server may still be starting), the
	// masked host seen, the token not.
	if !testutil.Poll(60*time.Second, func() bool {
		status, body = d.rawHeaders("GET", "/", "", e2b(sb.TrafficAccessToken))
		return status == http.StatusOK
	}) || body != "custom-host.example.com:8080|" {
		t.Fatalf("with the traffic token: %d %q", status, body)
	}
	for name, token := range map[string]string{"no token": "", "the envd token": sb.EnvdAccessToken, "a forged token": sb.TrafficAccessToken + "x"} {
		if status, body := d.rawHeaders("GET", "/", "", e2b(token)); status != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, status, body)
		}
	}
	// Hutch's own rules: exposed, the owner reaches it, the host masked;
	// it cannot be made public.
	_, err = d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: sb.SandboxID, Port: 8080, Public: true})
	wantCode(t, err, "S001")
	if _, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: sb.SandboxID, Port: 8080}); err != nil {
		t.Fatal(err)
	}
	if status, body := d.raw("GET", "/v1/sandboxes/"+sb.SandboxID+"/ports/8080/", "", ""); status != http.StatusOK || body != "custom-host.example.com:8080|" {
		t.Errorf("the owner's path route: %d %q", status, body)
	}

	// The terms are answered by sandbox::get and E2B's getInfo, kept
	// through a hibernation and its wake, and by each copy of a fork
	// (whose own traffic token opens it).
	checkTerms := func(when, id, token string) {
		t.Helper()
		if info, err := d.c.Get(ctx, id); err != nil || info.Preview == nil || !info.Preview.Private || info.Preview.HostHeader != "custom-host.example.com:${PORT}" {
			t.Errorf("%s: sandbox::get's preview %+v (%v)", when, info.Preview, err)
		}
		status, body := d.raw("GET", "/sandboxes/"+id, "", "")
		var got struct {
			Network struct {
				AllowPublicTraffic *bool
				MaskRequestHost    string
			}
		}
		if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || got.Network.AllowPublicTraffic == nil || *got.Network.AllowPublicTraffic || got.Network.MaskRequestHost != "custom-host.example.com:${PORT}" {
			t.Errorf("%s: getInfo %d %s", when, status, body)
		}
		h := map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "8080"}
		if status, body := d.rawHeaders("GET", "/", "", h); status != http.StatusForbidden {
			t.Errorf("%s, no token: %d %s, want 403", when, status, body)
		}
		h[api.HeaderE2BTrafficToken] = token
		if !testutil.Poll(60*time.Second, func() bool {
			status, body = d.rawHeaders("GET", "/", "", h)
			return status == http.StatusOK
		}) || body != "custom-host.example.com:8080|" {
			t.Errorf("%s, with the traffic token: %d %q", when, status, body)
		}
	}
	checkTerms("running", sb.SandboxID, sb.TrafficAccessToken)
	if _, err := d.c.Pause(ctx, sb.SandboxID, api.PauseHibernate); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Resume(ctx, sb.SandboxID); err != nil {
		t.Fatal(err)
	}
	checkTerms("woken from a hibernation", sb.SandboxID, sb.TrafficAccessToken)
	status, body = d.raw("POST", "/sandboxes/"+sb.SandboxID+"/fork", "", `{"count":1}`)
	var forked []struct {
		Sandbox *struct{ SandboxID, TrafficAccessToken string }
	}
	if err := json.Unmarshal([]byte(body), &forked); status != http.StatusCreated || err != nil || len(forked) != 1 || forked[0].Sandbox == nil {
		t.Fatalf("E2B fork: %d %s", status, body)
	}
	fork := forked[0].Sandbox
	d.ids = append(d.ids, fork.SandboxID)
	t.Cleanup(func() { _, _ = d.c.Stop(context.Background(), fork.SandboxID, true) })
	checkTerms("a fork", fork.SandboxID, fork.TrafficAccessToken)
}
