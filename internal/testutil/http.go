package testutil

import (
	"io"
	"net"
	"net/http"
	"testing"
)

// ServeHTTP serves body to every request on a new listener at addr
// ("127.0.0.1:0") until the test ends, and returns the port it got.
func ServeHTTP(t testing.TB, addr, body string) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}
