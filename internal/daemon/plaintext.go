package daemon

import (
	"fmt"

	"github.com/hutch-dev/hutch/internal/config"
)

// InsecurePlaintextFlag is the flag of `hutch serve` that lets a daemon
// without tls listen off loopback.
const InsecurePlaintextFlag = "--insecure-plaintext"

// checkPlaintext refuses listen addresses reachable from other hosts when
// the daemon serves no TLS: tokens, code and files would cross the network
// in the clear. opts.InsecurePlaintext lifts the refusal (a proxy in front
// that terminates TLS, a private link).
func checkPlaintext(opts Options, cfg config.Config) error {
	if cfg.TLS.Enabled() || opts.InsecurePlaintext {
		return nil
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", opts.Listen}, {"--engine-listen", opts.EngineListen}} {
		if l.addr == "" {
			continue
		}
		if ok, err := onLoopback(l.addr); err != nil || !ok {
			return fmt.Errorf("%s %s is not a loopback address and the config sets no tls: tokens and code would cross the network in the clear; set tls.cert and tls.key in the config (docs/operations.md, \"TLS\"), listen on 127.0.0.1, or pass %s to accept that",
				l.flag, l.addr, InsecurePlaintextFlag)
		}
	}
	return nil
}
