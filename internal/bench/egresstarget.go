package bench

// issue 37: the real server the egress scenarios reach, and the resolver
// that names it.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/hutch-dev/hutch/internal/vethns"
)

// EgressName is the name the egress target's resolver gives its server.
const EgressName = "egress.bench.test"

// maxBlob bounds the size of one download from the egress target.
const maxBlob = 4 << 30

// EgressTarget is the egress scenarios' server: HTTP on port 80 and
// HTTPS on port 443 (a certificate for EgressName from a CA of its own)
// on an address in a network namespace it made, and a DNS server on the
// host's loopback that answers EgressName with that address. GET / answers
// "ok"; GET /blob?bytes=N answers N zero bytes.
type EgressTarget struct {
	// Addr is the server's address, Resolver the DNS server's host:port.
	Addr, Resolver string
	// CAPEM is the server certificate's CA; Roots is a file of the host's
	// roots and it, for the daemon that verifies the server upstream.
	CAPEM []byte
	Roots string
	// Secret is the value the transform scenario sets; the server counts
	// the requests that carry it in X-Bench-Key.
	Secret string
	keyed  atomic.Int64

	dir     string
	ns      *vethns.NS
	closers []func() error
}

// StartEgressTarget sets the target up (root: it makes a network
// namespace and a veth pair); Close undoes it all.
func StartEgressTarget() (_ *EgressTarget, err error) {
	dir, err := os.MkdirTemp("", "hutch-bench-egress-")
	if err != nil {
		return nil, err
	}
	t := &EgressTarget{dir: dir, Secret: rand.Text()}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if err := t.makeNetns(); err != nil {
		return nil, err
	}
	caPEM, cert, err := egressCertificate()
	if err != nil {
		return nil, err
	}
	t.CAPEM = caPEM
	roots, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	t.Roots = filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(t.Roots, append(roots, caPEM...), 0o644); err != nil {
		return nil, err
	}
	var web, tlsWeb net.Listener
	err = t.ns.Inside(func() (err error) {
		if web, err = net.Listen("tcp4", t.Addr+":80"); err != nil {
			return err
		}
		tlsWeb, err = net.Listen("tcp4", t.Addr+":443")
		return err
	})
	if err != nil {
		return nil, err
	}
	plain := &http.Server{Handler: http.HandlerFunc(t.serve), ReadHeaderTimeout: 10 * time.Second}
	secure := &http.Server{Handler: http.HandlerFunc(t.serve), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = plain.Serve(web) }()
	go func() { _ = secure.ServeTLS(tlsWeb, "", "") }()
	t.closers = append(t.closers, plain.Close, secure.Close)
	return t, t.startResolver()
}

// serve answers the scenarios' requests.
func (t *EgressTarget) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Bench-Key") == t.Secret {
		t.keyed.Add(1)
	}
	if r.URL.Path != "/blob" {
		_, _ = w.Write([]byte("ok"))
		return
	}
	n, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64)
	if err != nil || n < 0 || n > maxBlob {
		http.Error(w, "bytes: 0 to 4 GiB", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	block := make([]byte, 1<<20)
	for n > 0 {
		k, err := w.Write(block[:min(n, int64(len(block)))])
		if err != nil {
			return
		}
		n -= int64(k)
	}
}

// Keyed is the number of requests that carried Secret.
func (t *EgressTarget) Keyed() int64 { return t.keyed.Load() }

// Close stops the servers and removes the namespace and the files.
func (t *EgressTarget) Close() {
	for _, c := range t.closers {
		_ = c()
	}
	if t.ns != nil {
		t.ns.Close()
	}
	_ = os.RemoveAll(t.dir)
}

// makeNetns makes the namespace, a veth pair into it and the two ends'
// addresses (a /30 of 172.30.0.0/16 picked by the process id).
func (t *EgressTarget) makeNetns() error {
	subnet := fmt.Sprintf("172.30.%d", os.Getpid()%250)
	ns, err := vethns.Make(fmt.Sprintf("hbeg%d", os.Getpid()%100000), subnet+".1", subnet+".2")
	if err != nil {
		return err
	}
	t.ns, t.Addr = ns, ns.Addr
	return nil
}

// startResolver serves EgressName's address over UDP and TCP on one port
// of the host's loopback.
func (t *EgressTarget) startResolver() error {
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		switch {
		case len(q.Question) != 1 || !strings.EqualFold(strings.TrimSuffix(q.Question[0].Name, "."), EgressName):
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300},
				A: net.ParseIP(t.Addr)})
		}
		_ = w.WriteMsg(m)
	})
	for range 10 {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			continue
		}
		for _, s := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: l, Handler: handler}} {
			go func() { _ = s.ActivateAndServe() }()
			t.closers = append(t.closers, s.Shutdown)
		}
		t.Resolver = pc.LocalAddr().String()
		return nil
	}
	return errors.New("no port free for the egress target's resolver")
}

// egressCertificate makes a CA and a certificate of it for EgressName.
func egressCertificate() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hutch bench egress CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: EgressName}, DNSNames: []string{EgressName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
