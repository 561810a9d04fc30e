package egressproxy

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/bench/pyclient"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/vethns"
)

// benchName is the name of the benchmarks' server (httptest's certificate
// is for it).
const benchName = "example.com"

// benchDir is the one sandbox of the benchmarks, at 127.0.0.1, whose
// policy they change.
type benchDir struct{ pol atomic.Pointer[egress.Policy] }

func (d *benchDir) Sandbox(netip.Addr) (Sandbox, bool) {
	return Sandbox{ID: "bench", Owner: "bench", Policy: d.pol.Load(), OpenPrivate: true}, true
}

// benchResolver names benchName's server.
type benchResolver struct{ addr netip.Addr }

func (r benchResolver) Lookup(string, []string) ([]netip.Addr, time.Duration, error) {
	return []netip.Addr{r.addr}, time.Minute, nil
}

// benchSecrets has every secret, its value "v".
type benchSecrets struct{}

func (benchSecrets) Value(string, string) (string, bool) { return "v", true }

// BenchmarkNewConnection times a new verified TLS connection carrying one
// request (Connection: close), as the egress-https bench scenario does,
// to an HTTPS server in a network namespace: direct, through the proxy by
// SNI (spliced), and through it with a transform (TLS terminated). Root:
// it makes the namespace. Compare the sub-benchmarks' p50 and CPU:
//
//	go test -run '^$' -bench NewConnection -benchtime 300x ./internal/egressproxy/
func BenchmarkNewConnection(b *testing.B) {
	testutil.RequiresRoot(b)
	subnet := fmt.Sprintf("172.29.%d", os.Getpid()%250)
	ns, err := vethns.Make(fmt.Sprintf("hegp%d", os.Getpid()%100000), subnet+".1", subnet+".2")
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "" && r.Header.Get("X-Key") != "v" {
			http.Error(w, "wrong key", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	if err := ns.Inside(func() (err error) {
		srv.Listener, err = net.Listen("tcp4", ns.Addr+":443")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	srv.StartTLS()
	defer srv.Close()
	upstream := netip.MustParseAddrPort(ns.Addr + ":443")

	ca, err := LoadCA(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p, err := Listen("127.0.0.1", Options{Resolver: benchResolver{upstream.Addr()}, CA: ca, Secrets: benchSecrets{}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	p.origDst = func(net.Conn) (netip.AddrPort, error) { return upstream, nil }
	// The proxy verifies the server upstream against its certificate.
	serverRoots := x509.NewCertPool()
	serverRoots.AddCert(srv.Certificate())
	p.http.proxy.Tr.TLSClientConfig.RootCAs = serverRoots
	dir := &benchDir{}
	p.SetDirectory(dir)
	// The client trusts both the server and the proxy's CA.
	pemOf := func(c *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	roots := string(append(pemOf(srv.Certificate()), pemOf(ca.cert)...))
	relay := p.relay
	for _, tc := range []struct {
		name   string
		to     netip.AddrPort
		policy api.EgressPolicy
	}{
		{"direct", upstream, api.EgressPolicy{}},
		// The tunnels joined by goroutines, as where the relay cannot start.
		{"sni-goroutines", p.Addr(), api.EgressPolicy{AllowOut: []string{benchName}}},
		{"sni", p.Addr(), api.EgressPolicy{AllowOut: []string{benchName}}},
		{"transform", p.Addr(), api.EgressPolicy{AllowOut: []string{benchName},
			Transforms: []api.EgressTransform{{Host: benchName, Headers: map[string]string{"X-Key": "{{secret.K}}"}}}}},
	} {
		pol, err := egress.Compile(&tc.policy)
		if err != nil {
			b.Fatal(err)
		}
		dir.pol.Store(pol)
		p.relay = relay
		if tc.name == "sni-goroutines" {
			p.relay = nil
		}
		b.Run(tc.name, func(b *testing.B) {
			// The client is another process: this one's CPU time is the
			// server's and, through the proxy, the proxy's.
			cmd := exec.Command("python3", "-c", pyclient.HTTPS, tc.to.Addr().String(), strconv.Itoa(int(tc.to.Port())), benchName, strconv.Itoa(b.N), roots, "0")
			cmd.Stderr = os.Stderr
			before := cpuTime()
			b.ResetTimer()
			out, err := cmd.Output()
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			var ds []time.Duration
			for _, f := range strings.Fields(string(out)) {
				n, _ := strconv.ParseInt(f, 10, 64)
				ds = append(ds, time.Duration(n))
			}
			if len(ds) != b.N {
				b.Fatalf("%d durations of %d", len(ds), b.N)
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
