package daemon

import (
	"net"
	"strconv"
)

// listenPorts returns the ports of listen addresses ("127.0.0.1:3111"),
// skipping empty ones and port 0 (not bound yet). The daemon's own ports
// are never forwarded to a sandbox's gateway.
func listenPorts(addrs ...string) []uint16 {
	var ports []uint16
	for _, a := range addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(p, 10, 16); err == nil && n > 0 {
			ports = append(ports, uint16(n))
		}
	}
	return ports
}
