package egressproxy

import (
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
// inside.
func (p *Proxy) tunnelTLS(c *conn) {
	defer c.Close()
	name, hello, err := serverName(c)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	addrs, err := p.route(c.sb, "sni", name, c.dst)
	if err != nil {
		return // a TLS client sees the connection closed
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := dial(ctx, addrs)
	cancel()
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(hello); err != nil {
		return
	}
	splice(c, up)
}

// splice copies a to b and b to a until both ends are done.
func splice(a io.ReadWriter, b net.Conn) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	_, _ = io.Copy(a, b)
	if w, ok := a.(net.Conn); ok {
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
