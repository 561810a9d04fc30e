package egress

// Gateway forwarding (seed 002). A sandbox created with network: true
// reaches the host's loopback services through its gateway address: the
// create-time env values that name one by URL ("http://localhost:8080/",
// "postgres://u:p@127.0.0.1:5432/db") are rewritten to the gateway, and
// exactly those ports, plus config gateway_ports, are forwarded. With
// several owners (api_tokens), or when the operator sets
// forwardable_ports, only the ports config.Forwardable admits are; an env
// URL naming another port is left as it is and the create response lists
// the port in unforwarded_ports. The daemon's own API and engine ports are
// never forwarded, even if named (networksvc decides).

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// localURL matches the authority of a URL on the host's loopback with an
// explicit port: "://", optional userinfo, the host, ":" and the port.
var localURL = regexp.MustCompile(`(://(?:[^/?#@\s]*@)?)((?i:localhost)|127\.0\.0\.1|\[::1\]):([0-9]{1,5})\b`)

// LoopbackPorts returns the ports of the loopback URLs in env's values.
func LoopbackPorts(env []string) []uint16 {
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

// RewriteLocalhost returns env with the host of every loopback URL in a
// value whose port is in ports replaced by gw; names and other text are
// unchanged.
func RewriteLocalhost(env []string, gw netip.Addr, ports []uint16) []string {
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

// SortedSet sorts ports and drops duplicates.
func SortedSet(ports []uint16) []uint16 {
	slices.Sort(ports)
	return slices.Compact(ports)
}
