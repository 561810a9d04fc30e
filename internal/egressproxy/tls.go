package egressproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// errHelloRead ends the handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// recorder is a connection's read side that keeps what it reads (at most
// maxHello bytes) and refuses to write: crypto/tls parses the ClientHello
// from it, and the bytes are replayed upstream.
type recorder struct {
	net.Conn
	r    io.Reader
	seen []byte
}

func (r *recorder) Read(b []byte) (int, error) {
	if len(r.seen) >= maxHello {
		return 0, errors.New("client hello too large")
	}
	b = b[:min(len(b), maxHello-len(r.seen))]
	n, err := r.r.Read(b)
	r.seen = append(r.seen, b[:n]...)
	return n, err
}

func (r *recorder) Write([]byte) (int, error) { return 0, errHelloRead }

// serverName reads c's ClientHello with crypto/tls and returns its SNI
// ("" without one) and the bytes read.
func serverName(c *conn) (string, []byte, error) {
	rec := &recorder{Conn: c.Conn, r: c.r}
	var name string
	var got bool
	err := tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, got = h.ServerName, true
		return nil, errHelloRead
	}}).HandshakeContext(context.Background())
	if !got {
		return "", nil, err
	}
	return name, rec.seen, nil
}

// tunnelTLS decides on a TLS connection by its SNI and, if it is
// admitted, joins it to the name's server as it is: the proxy never sees
// inside. It reports whether the relay took the connection.
func (p *Proxy) tunnelTLS(c *conn) bool {
	name, hello, err := serverName(c)
	if err != nil {
		c.Close()
		return false
	}
	_ = c.SetReadDeadline(time.Time{})
	addrs, d, err := p.route(c.sb, "sni", name, c.dst)
	if err != nil {
		c.Close() // a TLS client sees the connection closed
		return false
	}
	if name != "" && p.opts.CA != nil && c.sb.Policy.TransformFor(name) != nil {
		p.terminate(c, name, hello)
		return false
	}
	p.audit.record(c.sb, d)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := dial(ctx, addrs)
	cancel()
	if err != nil {
		return false
	}
	defer up.Close()
	// The sandbox's bytes read ahead and not yet replayed go first; then
	// the two sockets are joined as they are (splice(2) between TCP
	// sockets, no copy through the proxy).
	var from io.Reader = c
	if br, ok := c.r.(*bufio.Reader); ok {
		rest, _ := br.Peek(br.Buffered())
		hello = append(hello, rest...)
		from = c.Conn
	}
	if _, err := up.Write(hello); err != nil {
		return false
	}
	if from == c.Conn && p.relay != nil && p.relay.join(c.Conn, up, p.release) == nil {
		return true
	}
	splice(readWriter{from, c.Conn}, up)
	return false
}

// readWriter is a connection's read and write sides, apart.
type readWriter struct {
	io.Reader
	io.Writer
}

// terminate serves a TLS connection to name, whose requests a transform
// changes, with a certificate of the daemon's CA, and hands the requests
// to the HTTP side, which decides on each and sends it on over TLS
// verified against the host's roots.
func (p *Proxy) terminate(c *conn, name string, hello []byte) {
	replay := &conn{Conn: c.Conn, r: io.MultiReader(bytes.NewReader(hello), c.r)}
	ts := tls.Server(replay, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		// Tickets of a config made for one connection could never be
		// used: not sending them saves an encryption and a write.
		SessionTicketsDisabled: true,
		// The sandbox's hop stays on this host, where no one records
		// traffic to decrypt later: X25519 (or P-256) alone spares the
		// post-quantum hybrid's ML-KEM work on every handshake. The
		// proxy's own TLS upstream keeps Go's default, hybrid first.
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.opts.CA.leaf(name)
		},
	})
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	if err := ts.HandshakeContext(context.Background()); err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	p.http.push(&conn{Conn: ts, r: ts, sb: c.sb, dst: c.dst, sni: name})
}

// splice copies a to b and b to a until both ends are done. Between two
// *net.TCPConn, io.Copy is splice(2): the bytes stay in the kernel.
func splice(a readWriter, b net.Conn) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a.Reader)
		closeWrite(b)
		close(done)
	}()
	_, _ = io.Copy(a.Writer, b)
	if w, ok := a.Writer.(net.Conn); ok {
		closeWrite(w)
	}
	<-done
}

// closeWrite half-closes c when it can, else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
