package sandbox

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Gateway forwarding (seed 002). A sandbox created with network: true
// reaches the host's loopback services through its gateway address: the
// create-time env values that name one by URL ("http://localhost:8080/",
// "postgres://u:p@127.0.0.1:5432/db") are rewritten to the gateway, and
// exactly those ports, plus config gateway_ports, are forwarded. With
// several owners (api_tokens), or when the operator sets
// forwardable_ports, only the ports config.Forwardable admits are; an env
// URL naming another port is left as it is and the create response lists
// the port in unforwarded_ports. The daemon's own API and engine ports are
// never forwarded, even if named.

// localURL matches the authority of a URL on the host's loopback with an
// explicit port: "://", optional userinfo, the host, ":" and the port.
var localURL = regexp.MustCompile(`(://(?:[^/?#@\s]*@)?)((?i:localhost)|127\.0\.0\.1|\[::1\]):([0-9]{1,5})\b`)

// loopbackPorts returns the ports of the loopback URLs in env's values.
func loopbackPorts(env []string) []uint16 {
	var ports []uint16
	for _, kv := range env {
		_, v, _ := strings.Cut(kv, "=")
		for _, m := range localURL.FindAllStringSubmatch(v, -1) {
			if p, ok := parsePort(m[3]); ok {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// rewriteLocalhost returns env with the host of every loopback URL in a
// value whose port is in ports replaced by gw; names and other text are
// unchanged.
func rewriteLocalhost(env []string, gw netip.Addr, ports []uint16) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			out[i] = kv
			continue
		}
		out[i] = k + "=" + localURL.ReplaceAllStringFunc(v, func(u string) string {
			m := localURL.FindStringSubmatch(u)
			if p, ok := parsePort(m[3]); !ok || !slices.Contains(ports, p) {
				return u
			}
			return m[1] + gw.String() + ":" + m[3]
		})
	}
	return out
}

// parsePort parses a TCP port, 1 to 65535.
func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	return uint16(n), err == nil && n > 0
}

// protectedPorts are host ports no sandbox may reach through its gateway.
type protectedPorts struct {
	mu sync.Mutex
	// ports is guarded by mu.
	ports map[uint16]bool
}

// ProtectPorts names host ports that no sandbox reaches through its
// gateway, whatever its env or gateway_ports say: the daemon calls it with
// its API and engine ports as soon as it knows them.
func (m *Manager) ProtectPorts(ports ...uint16) {
	m.protected.mu.Lock()
	defer m.protected.mu.Unlock()
	if m.protected.ports == nil {
		m.protected.ports = map[uint16]bool{}
	}
	for _, p := range ports {
		m.protected.ports[p] = true
	}
}

// isProtected reports whether port is one of the daemon's own.
func (m *Manager) isProtected(port uint16) bool {
	m.protected.mu.Lock()
	defer m.protected.mu.Unlock()
	return m.protected.ports[port]
}

// gatewayPorts decides which host loopback ports sandbox rec reaches at
// its gateway: gateway_ports and the ports of the loopback URLs in its env
// that config.Forwardable admits, never the daemon's own. Refused are the
// ports its env names that are not forwarded. Both are sorted, without
// duplicates.
func (m *Manager) gatewayPorts(rec *record) (forward, refused []uint16) {
	if !rec.Network {
		return nil, nil
	}
	named := sortedSet(loopbackPorts(rec.Env))
	for _, p := range m.cfg.GatewayPorts {
		forward = append(forward, uint16(p)) // 1..65535 (config.Validate)
	}
	// The operator's package indexes on the host (sandbox::interpreter::install).
	forward = append(forward, loopbackPorts(indexEnv(m.cfg.PackageIndexes.URLs()))...)
	for _, p := range named {
		if m.cfg.Forwardable(int(p)) {
			forward = append(forward, p)
		}
	}
	forward = slices.DeleteFunc(sortedSet(forward), func(p uint16) bool {
		if m.isProtected(p) {
			m.log.Warn("not forwarding the daemon's own port to a sandbox", "sandbox", rec.ID, "port", p)
			return true
		}
		return false
	})
	for _, p := range named {
		if !slices.Contains(forward, p) {
			refused = append(refused, p)
		}
	}
	if len(refused) > 0 {
		m.log.Info("not forwarding ports named in a sandbox's env", "sandbox", rec.ID, "owner", rec.Owner, "ports", refused)
	}
	return forward, refused
}

// sortedSet sorts ports and drops duplicates.
func sortedSet(ports []uint16) []uint16 {
	slices.Sort(ports)
	return slices.Compact(ports)
}

// useGateway points the loopback URLs of rec's env whose ports are
// forwarded at inst's gateway, once the runtime has given the sandbox a
// network.
func (m *Manager) useGateway(rec *record, inst runtime.Instance, ports []uint16) {
	ni, ok := inst.(runtime.NetworkInfo)
	if !ok || !rec.Network || !ni.Gateway().IsValid() {
		return
	}
	gw := ni.Gateway()
	rec.Env = rewriteLocalhost(rec.Env, gw, ports)
	m.log.Info("sandbox network", "sandbox", rec.ID, "gateway", gw.String(), "gateway_ports", ports)
}

// indexEnv makes env entries of urls, for the loopback URL helpers.
func indexEnv(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = "INDEX=" + u
	}
	return out
}
