package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
)

// DefaultSocket is the daemon's local Unix socket as the package installs
// it (`hutch serve --socket`): FromEnv uses it when $HUTCH_URL is unset
// and it exists.
const DefaultSocket = "/run/hutch/hutch.sock"

// socketHost is the Host of requests over a Unix socket: a loopback
// name, which the daemon's host check lets through.
const socketHost = "localhost"

// NewUnix returns a client of the daemon whose HTTP API listens on the
// Unix socket at path (the daemon's --socket); a member of the socket's
// group needs no token there unless the daemon has api_tokens.
func NewUnix(path, token string) *Client {
	c := New("http://"+socketHost, token)
	c.shown = "unix://" + path
	t := newTransport()
	d := &net.Dialer{}
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", path) }
	c.httpc.Transport = t
	return c
}

// WithTLS makes c's https connections use cfg (the CAs it trusts, a client
// certificate) and returns c. Call it before c's first request.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	if t, ok := c.httpc.Transport.(*http.Transport); ok {
		t.TLSClientConfig = cfg
	}
	return c
}

// TLSConfig builds the TLS settings of a client: caFile, when set, is a PEM
// file of the CAs to trust instead of the system's (a daemon whose
// certificate a private CA signed); certFile and keyFile, when set, are a
// client certificate to present (the daemon's tls.client_ca maps it to an
// owner).
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Env returns the client the environment (getenv) names: the daemon at
// $HUTCH_URL; without it the local socket ($HUTCH_SOCKET, default
// DefaultSocket) when that exists, else DefaultURL. $HUTCH_TOKEN is the
// bearer token, $HUTCH_CA_CERT a PEM file of CAs to trust, and
// $HUTCH_CLIENT_CERT and $HUTCH_CLIENT_KEY a client certificate. When
// those files do not load, every call of the client fails saying why.
func Env(getenv func(string) string) *Client {
	url, token := getenv("HUTCH_URL"), getenv("HUTCH_TOKEN")
	if url == "" {
		if sock := SocketPath(getenv); IsSocket(sock) {
			return NewUnix(sock, token)
		}
	}
	c := New(url, token)
	ca, cert, key := getenv("HUTCH_CA_CERT"), getenv("HUTCH_CLIENT_CERT"), getenv("HUTCH_CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return c
	}
	cfg, err := TLSConfig(ca, cert, key)
	if err != nil {
		c.httpc.Transport = failing{fmt.Errorf("$HUTCH_CA_CERT, $HUTCH_CLIENT_CERT, $HUTCH_CLIENT_KEY: %w", err)}
		return c
	}
	return c.WithTLS(cfg)
}

// SocketPath is the local socket the environment names: $HUTCH_SOCKET,
// else DefaultSocket.
func SocketPath(getenv func(string) string) string {
	if sock := getenv("HUTCH_SOCKET"); sock != "" {
		return sock
	}
	return DefaultSocket
}

// IsSocket reports whether a Unix socket exists at path.
func IsSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Type() == os.ModeSocket
}

// failing is a transport whose every request fails with err: the client
// of an environment that does not load (FromEnv) says why on first use.
type failing struct{ err error }

func (f failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
