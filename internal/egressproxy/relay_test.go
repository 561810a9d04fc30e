package egressproxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// joiners are the two ways the proxy joins a tunnel: the relay's thread,
// and goroutines (where the relay could not start, or did not take the
// connections). join joins a and b and calls done when it is over.
var joiners = []struct {
	name string
	join func(t testing.TB, a, b net.Conn, done func())
}{
	{"relay", func(t testing.TB, a, b net.Conn, done func()) {
		r, err := newRelay()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.close)
		if err := r.join(a, b, done); err != nil {
			t.Fatal(err)
		}
	}},
	{"goroutines", func(_ testing.TB, a, b net.Conn, done func()) {
		go func() {
			defer done()
			defer a.Close()
			defer b.Close()
			splice(readWriter{a, a}, b)
		}()
	}},
}

// joined makes a tunnel with join between a client and a server
// connection; ended says when join is done with it.
func joined(t *testing.T, join func(t testing.TB, a, b net.Conn, done func())) (client, server *net.TCPConn, ended *atomic.Bool) {
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	ended = &atomic.Bool{}
	join(t, a, b, func() { ended.Store(true) })
	return client, server, ended
}

// TestTunnelHalfClose sends a large body each way, each side closing its
// sending half right after its last byte: the other side gets every byte,
// then the end, and the tunnel ends only after both.
func TestTunnelHalfClose(t *testing.T) {
	for _, j := range joiners {
		t.Run(j.name, func(t *testing.T) {
			client, server, ended := joined(t, j.join)
			up, down := make([]byte, 8<<20+123), make([]byte, 5<<20+7)
			_, _ = rand.Read(up)
			_, _ = rand.Read(down)
			sent := make(chan error, 1)
			go func() {
				_, err := client.Write(up)
				sent <- errors.Join(err, client.CloseWrite())
			}()
			got, err := io.ReadAll(server)
			if err != nil || !bytes.Equal(got, up) {
				t.Fatalf("server got %d bytes of %d (equal %v), %v", len(got), len(up), bytes.Equal(got, up), err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if ended.Load() {
				t.Fatal("the tunnel ended with a way still open")
			}
			if _, err := server.Write(down); err != nil {
				t.Fatal(err)
			}
			if err := server.Close(); err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(client)
			if err != nil || !bytes.Equal(got, down) {
				t.Fatalf("client got %d bytes of %d (equal %v), %v", len(got), len(down), bytes.Equal(got, down), err)
			}
			testutil.Eventually(t, 10*time.Second, ended.Load, "the tunnel did not end")
		})
	}
}

// TestTunnelReset: when the server resets its connection, the client sees
// its connection end, and once it closes it the tunnel's slot is
// released (the relay ends the tunnel at the reset already).
func TestTunnelReset(t *testing.T) {
	for _, j := range joiners {
		t.Run(j.name, func(t *testing.T) {
			client, server, ended := joined(t, j.join)
			if _, err := client.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if _, err := io.ReadFull(server, buf); err != nil {
				t.Fatal(err)
			}
			_ = server.SetLinger(0)
			server.Close() // a reset
			_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := client.Read(buf); err == nil || errors.Is(err, io.ErrNoProgress) {
				t.Fatalf("client read after the reset: %v", err)
			}
			client.Close()
			testutil.Eventually(t, 10*time.Second, ended.Load, "the tunnel did not end")
		})
	}
}

// TestRelayClose cuts the relay's tunnels when it stops, and refuses new
// ones after.
func TestRelayClose(t *testing.T) {
	r, err := newRelay()
	if err != nil {
		t.Fatal(err)
	}
	client, a := tcpPair(t)
	b, _ := tcpPair(t)
	var ended atomic.Bool
	if err := r.join(a, b, func() { ended.Store(true) }); err != nil {
		t.Fatal(err)
	}
	r.close()
	if !ended.Load() {
		t.Fatal("a tunnel outlived the relay")
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err == nil {
		t.Fatal("the client's connection is still open")
	}
	c2, a2 := tcpPair(t)
	b2, _ := tcpPair(t)
	if err := r.join(a2, b2, nil); err == nil {
		t.Fatal("a closed relay took a tunnel")
	}
	// Refused, the connections are still the caller's.
	if _, err := a2.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c2, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTunnelRoundTrip times a small message's round trip through a
// tunnel (a TLS handshake's flights, a request and its answer, are such
// round trips) against the same round trip direct: the difference is
// what each way of joining adds per round trip.
//
//	go test -run '^$' -bench TunnelRoundTrip ./internal/egressproxy/
func BenchmarkTunnelRoundTrip(b *testing.B) {
	echo := func(c net.Conn) {
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
	pingPong := func(b *testing.B, c net.Conn) {
		buf := make([]byte, 64)
		b.ResetTimer()
		for range b.N {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		client, server := tcpPair(b)
		go echo(server)
		pingPong(b, client)
		client.Close()
	})
	for _, j := range joiners {
		b.Run(j.name, func(b *testing.B) {
			client, a := tcpPair(b)
			c, server := tcpPair(b)
			go echo(server)
			j.join(b, a, c, func() {})
			pingPong(b, client)
			client.Close()
			server.Close()
		})
	}
}

// TestTunnelBulk sends 128 MiB down a tunnel to a client reading as it
// comes: no read waits long (a relay that stopped waiting for the right
// socket once stalled here until TCP's persist timer, a minute later).
func TestTunnelBulk(t *testing.T) {
	for _, j := range joiners {
		t.Run(j.name, func(t *testing.T) {
			client, server, ended := joined(t, j.join)
			const total = 128 << 20
			go func() {
				block := make([]byte, 1<<20)
				for range total / len(block) {
					if _, err := server.Write(block); err != nil {
						return
					}
				}
				server.Close()
			}()
			buf := make([]byte, 256<<10)
			got := 0
			for {
				_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
				n, err := client.Read(buf)
				got += n
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("after %d bytes of %d: %v", got, total, err)
				}
			}
			if got != total {
				t.Fatalf("%d bytes of %d", got, total)
			}
			client.Close()
			testutil.Eventually(t, 10*time.Second, ended.Load, "the tunnel did not end")
		})
	}
}
