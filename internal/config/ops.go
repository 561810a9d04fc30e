package config

import (
	"fmt"
	"reflect"
	"strings"
)

// TLS is the tls block: the certificate and key that the HTTP API and the
// engine WebSocket serve, and the CAs whose client certificates map to
// owners. The daemon reloads the three files on SIGHUP and when they
// change on disk.
type TLS struct {
	// Cert and Key are PEM files: the server's certificate chain and its
	// private key.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ClientCA, when set, is a PEM file of CAs: a client that presents a
	// certificate they signed acts for the owner its subject's common
	// name names (with api_tokens set); a client without one still may
	// send a bearer token.
	ClientCA string `yaml:"client_ca"`
}

// Enabled reports whether the TCP listeners serve TLS.
func (t TLS) Enabled() bool { return t.Cert != "" }

// validateOps checks the operations keys: tls and local_socket_owner.
func (c *Config) validateOps() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		bad("tls.cert and tls.key go together: set both (PEM files) or neither")
	}
	if c.TLS.ClientCA != "" && c.TLS.Cert == "" {
		bad("tls.client_ca needs tls.cert and tls.key: client certificates are asked for over TLS only")
	}
	if o := c.LocalSocketOwner; o != "" {
		if _, ok := c.APITokens[o]; !ok {
			bad("local_socket_owner names %q, which is not an owner of api_tokens (without api_tokens the socket's user is the local user)", o)
		}
	}
	return errs
}

// ChangedKeys lists the top-level keys whose values differ between a and
// b, in the order Config declares them.
func ChangedKeys(a, b Config) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var keys []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			keys = append(keys, name)
		}
	}
	return keys
}
