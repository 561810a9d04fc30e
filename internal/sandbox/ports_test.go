package sandbox

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestPortInfoURLs(t *testing.T) {
	const id = "5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a00"
	token := "0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name      string
		domain    string
		listen    int
		p         exposedPort
		url, host string
	}{
		{"no domain", "", 3111, exposedPort{port: 8000}, "/v1/sandboxes/" + id + "/ports/8000/", ""},
		{"owner's", "preview.example.com", 3111, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "http://8000-" + id + ".preview.example.com:3111/"},
		{"public", "localhost", 3111, exposedPort{port: 5173, public: true, token: token},
			"/p/" + token + "/", "http://5173-" + id + ".localhost:3111/?hutch_preview_token=" + token},
		{"listening on 80", "preview.example.com", 80, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "http://8000-" + id + ".preview.example.com/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manager{cfg: config.Config{PreviewDomain: tc.domain}, listenPort: tc.listen}
			info := m.portInfo(id, &tc.p)
			if info.URL != tc.url || info.HostURL != tc.host {
				t.Errorf("urls %q %q, want %q %q", info.URL, info.HostURL, tc.url, tc.host)
			}
		})
	}
}
