package daemon

import (
	"context"
	"fmt"
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

// startEngine serves the engine WebSocket over table on addr ("" disables
// it), at most maxConns connections at once; a serving error is sent to
// errc.
func startEngine(addr string, maxConns int, table *functions.Table, opts engineapi.Options, errc chan<- error) (engine, error) {
	if addr == "" {
		return engine{}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return engine{}, fmt.Errorf("listening on %s (engine WebSocket): %w", addr, err)
	}
	e := engine{srv: engineapi.New(table, opts), ln: netutil.LimitListener(ln, maxConns)}
	go func() { errc <- e.srv.Serve(e.ln) }()
	return e, nil
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
