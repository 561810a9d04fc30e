package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hutch-dev/hutch/internal/webguard"
)

// profiler serves net/http/pprof on a listener of its own, apart from the
// API: profiles reveal memory contents and cost CPU, so they are never on
// the API's address and only ever on loopback. The zero value is disabled.
type profiler struct {
	srv *http.Server
	ln  net.Listener
}

// CheckPprofAddr rejects a --pprof address that is not host:port on a
// loopback host (127.0.0.1, ::1 or localhost).
func CheckPprofAddr(addr string) error {
	if ok, err := onLoopback(addr); err != nil {
		return fmt.Errorf("pprof: %w", err)
	} else if !ok {
		return fmt.Errorf("pprof address %q must be on loopback (127.0.0.1:PORT, [::1]:PORT or localhost:PORT): profiles expose the daemon's memory", addr)
	}
	return nil
}

// startProfiler serves the pprof handlers on addr ("" disables it); a
// serving error is sent to errc.
func startProfiler(addr string, errc chan<- error) (profiler, error) {
	if addr == "" {
		return profiler{}, nil
	}
	if err := CheckPprofAddr(addr); err != nil {
		return profiler{}, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return profiler{}, fmt.Errorf("listening on %s (pprof): %w", addr, err)
	}
	// A DNS-rebound page could read the profiles: the web guard's
	// loopback-only policy shuts it out.
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := profiler{ln: ln, srv: &http.Server{Handler: (*webguard.Policy)(nil).Wrap(mux), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := p.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("pprof listener: %w", err)
		}
	}()
	return p, nil
}

// addr is the bound address, "" when disabled.
func (p profiler) addr() string {
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// close stops serving profiles at once; a profile being taken is cut
// off rather than holding up the shutdown.
func (p profiler) close() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.Close()
}
