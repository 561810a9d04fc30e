package daemon

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestCheckPlaintext(t *testing.T) {
	withTLS := config.Default()
	withTLS.TLS = config.TLS{Cert: "/c.pem", Key: "/k.pem"}
	tests := []struct {
		name     string
		opts     Options
		cfg      config.Config
		wantFlag string
	}{
		{"loopback", Options{Listen: "127.0.0.1:3111", EngineListen: "[::1]:49134"}, config.Default(), ""},
		{"all interfaces", Options{Listen: "0.0.0.0:3111"}, config.Default(), "--listen"},
		{"engine off loopback", Options{Listen: "127.0.0.1:3111", EngineListen: ":49134"}, config.Default(), "--engine-listen"},
		{"tls", Options{Listen: "0.0.0.0:3111", EngineListen: ":49134"}, withTLS, ""},
		{"insecure flag", Options{Listen: "0.0.0.0:3111", InsecurePlaintext: true}, config.Default(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPlaintext(tc.opts, tc.cfg)
			switch {
			case tc.wantFlag == "" && err != nil:
				t.Fatalf("checkPlaintext = %v, want nil", err)
			case tc.wantFlag != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantFlag+" ") ||
				!strings.Contains(err.Error(), InsecurePlaintextFlag) || !strings.Contains(err.Error(), "tls.cert")):
				t.Fatalf("checkPlaintext = %v, want an error naming %s, tls.cert and %s", err, tc.wantFlag, InsecurePlaintextFlag)
			}
		})
	}
}
