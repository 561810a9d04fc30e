package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

// TestEgressCAInMicroVM (issue 37): a microVM sandbox with a network
// trusts hutch's egress CA as a gVisor one does: its image's CA bundle
// holds the image's certificates and then the daemon's CA, and its env
// points the usual variables at that bundle. One boot; needs
// HUTCH_TEST_RUNTIMES to name microvm.
func TestEgressCAInMicroVM(t *testing.T) {
	const imageCA = "IMAGE CA\n"
	d := startRuntimesDaemonWith(t, []string{"microvm"}, "", map[string][]ocitest.File{"bbca": {
		ocitest.Dir("etc/ssl", 0o755), ocitest.Dir("etc/ssl/certs", 0o755),
		ocitest.Reg("etc/ssl/certs/ca-certificates.crt", imageCA, 0o644),
	}})
	ca, err := os.ReadFile(filepath.Join(d.dataDir, "egress-ca", egressproxy.CACertFile))
	if err != nil || !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		t.Fatalf("the daemon's egress CA: %q, %v", ca, err)
	}
	id := d.create(api.CreateRequest{Image: "bbca", Runtime: "microvm", Network: true})
	r := d.exec(id, "sh", "-c", `cat /etc/ssl/certs/ca-certificates.crt; echo "SSL_CERT_FILE=$SSL_CERT_FILE"`)
	if want := imageCA + string(ca) + "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt\n"; r.Stdout != want {
		t.Errorf("in the microVM: %+v\nwant stdout %q", r, want)
	}
}
