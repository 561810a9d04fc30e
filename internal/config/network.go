package config

import (
	"fmt"
	"net/netip"

	"github.com/hutch-dev/hutch/internal/netplumb"
)

// DefaultNetworkPool is network_pool's default.
const DefaultNetworkPool = "10.200.0.0/16"

// validateNetwork checks network_pool and gateway_ports.
func (c *Config) validateNetwork() []error {
	var errs []error
	if p, err := netip.ParsePrefix(c.NetworkPool); err != nil {
		errs = append(errs, fmt.Errorf("network_pool must be an IPv4 prefix such as %s, got %q", DefaultNetworkPool, c.NetworkPool))
	} else if err := netplumb.CheckPool(p); err != nil {
		errs = append(errs, fmt.Errorf("network_pool: %w", err))
	}
	for _, port := range c.GatewayPorts {
		if port < 1 || port > 65535 {
			errs = append(errs, fmt.Errorf("gateway_ports must be TCP ports between 1 and 65535, got %d", port))
		}
	}
	return errs
}
