package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
)

// tlsWatchInterval is how often the TLS files are looked at for a change.
const tlsWatchInterval = 2 * time.Second

// certs holds the TLS certificate, key and client CAs of the TCP
// listeners. Every handshake takes the ones loaded last, so a reload (on
// SIGHUP, `hutch admin reload` or a change of the files) reaches new
// connections while those open keep theirs.
type certs struct {
	log *slog.Logger

	// mu guards the fields below.
	mu    sync.RWMutex
	files config.TLS
	cert  *tls.Certificate
	pool  *x509.CertPool // nil without client_ca
	stamp string         // the files' sizes and times at the last load
}

// loadCerts reads the files of the tls block.
func loadCerts(files config.TLS, log *slog.Logger) (*certs, error) {
	c := &certs{log: log}
	if err := c.load(files); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads files and, when they are good, serves them from the next
// handshake on; a bad file keeps what was loaded before.
func (c *certs) load(files config.TLS) error {
	stamp := fileStamp(files.Cert, files.Key, files.ClientCA)
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		return fmt.Errorf("tls.cert %s, tls.key %s: %w", files.Cert, files.Key, err)
	}
	var pool *x509.CertPool
	if files.ClientCA != "" {
		pem, err := os.ReadFile(files.ClientCA)
		if err != nil {
			return fmt.Errorf("tls.client_ca: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls.client_ca %s: no PEM certificate in it", files.ClientCA)
		}
	}
	c.mu.Lock()
	c.files, c.cert, c.pool, c.stamp = files, &cert, pool, stamp
	c.mu.Unlock()
	return nil
}

// reload reads the files again (their paths may be new: a config reload).
func (c *certs) reload(files config.TLS) error { return c.load(files) }

// serverConfig is the tls.Config of a listener: each handshake gets the
// certificate and client CAs loaded last. Client certificates are asked
// for and verified when client_ca is set, never required (a client may
// send a bearer token instead).
func (c *certs) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c.mu.RLock()
			defer c.mu.RUnlock()
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*c.cert}, NextProtos: []string{"http/1.1"}}
			if c.pool != nil {
				cfg.ClientCAs, cfg.ClientAuth = c.pool, tls.VerifyClientCertIfGiven
			}
			return cfg, nil
		},
	}
}

// watch reloads the files when their size or time changes, until ctx
// ends. A half-written pair fails to load and is taken up once whole.
func (c *certs) watch(ctx context.Context) {
	t := time.NewTicker(tlsWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.RLock()
		files, old := c.files, c.stamp
		c.mu.RUnlock()
		if fileStamp(files.Cert, files.Key, files.ClientCA) == old {
			continue
		}
		if err := c.load(files); err != nil {
			c.log.Warn("tls: the changed files do not load; serving the previous certificate", "err", err)
			continue
		}
		c.log.Info("tls: reloaded the certificate after its files changed", "cert", files.Cert)
	}
}

// fileStamp is the size and modification time of each path, "" for one
// that does not exist.
func fileStamp(paths ...string) string {
	s := ""
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			s += fmt.Sprintf("%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
		} else if !errors.Is(err, os.ErrNotExist) {
			s += p + ":" + err.Error() + ";"
		}
	}
	return s
}

// withTLS serves ln over TLS when the config has a tls block.
func (d *daemon) withTLS(ln net.Listener) net.Listener {
	if d.certs == nil {
		return ln
	}
	return tls.NewListener(ln, d.certs.serverConfig())
}
