package config

import (
	"strings"
	"testing"
)

func TestOpsKeys(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"none", "", ""},
		{"tls", "tls: {cert: /c.pem, key: /k.pem, client_ca: /ca.pem}", ""},
		{"cert without key", "tls: {cert: /c.pem}", "tls.cert and tls.key"},
		{"key without cert", "tls: {key: /k.pem}", "tls.cert and tls.key"},
		{"client_ca alone", "tls: {client_ca: /ca.pem}", "tls.client_ca needs"},
		{"socket owner", "api_tokens: {alice: alice-0123456789abcdef}\nlocal_socket_owner: alice", ""},
		{"socket owner unknown", "api_tokens: {alice: alice-0123456789abcdef}\nlocal_socket_owner: bob", `local_socket_owner names "bob"`},
		{"socket owner without tokens", "local_socket_owner: bob", `local_socket_owner names "bob"`},
		{"typo", "tls: {certs: /c.pem}", `unknown key "tls.certs"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(tc.yaml, "cert:") && !cfg.TLS.Enabled() {
					t.Fatal("tls not enabled")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestChangedKeys(t *testing.T) {
	a := Default()
	b := Default()
	if got := ChangedKeys(a, b); len(got) != 0 {
		t.Fatalf("equal configs differ in %v", got)
	}
	b.APITokens = map[string]string{"alice": "alice-0123456789abcdef"}
	b.TLS.Cert = "/c.pem"
	b.MaxConcurrentSandboxes = 3
	if got := strings.Join(ChangedKeys(a, b), ","); got != "max_concurrent_sandboxes,api_tokens,tls" {
		t.Fatalf("ChangedKeys = %s", got)
	}
}
