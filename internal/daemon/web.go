package daemon

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// InsecureNoAuthFlag is the flag of `hutch serve` that lets a daemon
// without api_tokens listen off loopback.
const InsecureNoAuthFlag = "--insecure-no-auth"

// checkExposure refuses listen addresses reachable from other hosts when
// the daemon has no api_tokens: whoever reaches such a daemon runs code
// on this host, as its owner. opts.InsecureNoAuth lifts the refusal.
func checkExposure(opts Options, cfg config.Config) error {
	if len(cfg.APITokens) > 0 || opts.InsecureNoAuth {
		return nil
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", opts.Listen}, {"--engine-listen", opts.EngineListen}} {
		if l.addr == "" {
			continue
		}
		if ok, err := onLoopback(l.addr); err != nil || !ok {
			return fmt.Errorf("%s %s is not a loopback address and the config sets no api_tokens: anyone who can reach it could run code on this host; set api_tokens in the config, listen on 127.0.0.1, or pass %s to accept that",
				l.flag, l.addr, InsecureNoAuthFlag)
		}
	}
	return nil
}

// onLoopback reports whether a listen address (host:port) is on a loopback
// host: 127.0.0.0/8, ::1 or localhost. An empty host is every interface.
func onLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return webguard.LoopbackHost(host), nil
}

// webGuard is the policy of both transports: the config's allowed_hosts
// and allowed_origins, plus the host of each listen address that names one
// host (a client dials the daemon by it; a wildcard address names none).
func webGuard(cfg config.Config, listens ...string) (*webguard.Policy, error) {
	hosts := append([]string(nil), cfg.AllowedHosts...)
	for _, l := range listens {
		host, _, err := net.SplitHostPort(l)
		if err != nil || host == "" {
			continue
		}
		if a, err := netip.ParseAddr(host); err == nil && a.IsUnspecified() {
			continue
		}
		hosts = append(hosts, host)
	}
	return webguard.New(hosts, cfg.AllowedOrigins)
}
