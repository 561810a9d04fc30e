package daemon

import (
	"context"
	"net"

	"golang.org/x/net/netutil"

	"github.com/hutch-dev/hutch/internal/engineapi"
	"github.com/hutch-dev/hutch/internal/functions"
)

// engine is the engine WebSocket transport of a running daemon; the zero
// value is a disabled one.
type engine struct {
	srv *engineapi.Server
	ln  net.Listener
}

// startEngine serves the engine WebSocket over table on ln (nil disables
// it), at most maxConns connections at once, through wrap (TLS); a
// serving error is sent to errc.
func startEngine(ln net.Listener, wrap func(net.Listener) net.Listener, maxConns int, table *functions.Table, opts engineapi.Options, errc chan<- error) engine {
	if ln == nil {
		return engine{}
	}
	e := engine{srv: engineapi.New(table, opts), ln: wrap(netutil.LimitListener(ln, maxConns))}
	go func() { errc <- e.srv.Serve(e.ln) }()
	return e
}

// addr is the bound address, "" when disabled.
func (e engine) addr() string {
	if e.ln == nil {
		return ""
	}
	return e.ln.Addr().String()
}

// shutdown closes every session and waits for them.
func (e engine) shutdown(ctx context.Context) error {
	if e.srv == nil {
		return nil
	}
	return e.srv.Shutdown(ctx)
}
