package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestCheckPprofAddr(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr string
	}{
		{addr: "127.0.0.1:6060"},
		{addr: "127.0.0.2:0"},
		{addr: "[::1]:6060"},
		{addr: "localhost:6060"},
		{addr: "0.0.0.0:6060", wantErr: "must be on loopback"},
		{addr: ":6060", wantErr: "must be on loopback"},
		{addr: "10.0.0.1:6060", wantErr: "must be on loopback"},
		{addr: "example.com:6060", wantErr: "must be on loopback"},
		{addr: "6060", wantErr: "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckPprofAddr(tt.addr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckPprofAddr = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckPprofAddr = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestProfilerServesPprof(t *testing.T) {
	errc := make(chan error, 1)
	p, err := startProfiler("127.0.0.1:0", errc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
		"/debug/pprof/cmdline":           "",
	} {
		resp, err := http.Get("http://" + p.addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %s, body %.80q; want 200 containing %q", path, resp.Status, body, want)
		}
	}
	// The API's routes are not served there.
	resp, err := http.Get("http://" + p.addr() + "/v1/sandboxes")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/sandboxes on the pprof listener = %s, want 404", resp.Status)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("closing reported a serving error: %v", err)
	default:
	}
}

func TestProfilerDisabled(t *testing.T) {
	p, err := startProfiler("", nil)
	if err != nil || p.addr() != "" || p.close() != nil {
		t.Fatalf("disabled profiler: %v, addr %q", err, p.addr())
	}
}
