package config

import (
	"fmt"
	"slices"
)

// validateOwners checks the keys that keep owners apart: admin_owners,
// forwardable_ports, max_sandboxes_per_owner and
// max_concurrent_exec_per_owner.
func (c *Config) validateOwners() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, o := range c.AdminOwners {
		if _, ok := c.APITokens[o]; !ok {
			bad("admin_owners names %q, which is not an owner of api_tokens (without api_tokens the local user is the operator)", o)
		}
	}
	for _, port := range c.ForwardablePorts {
		if port < 1 || port > 65535 {
			bad("forwardable_ports must be TCP ports between 1 and 65535, got %d", port)
		}
	}
	if c.MaxSandboxesPerOwner < 0 || c.MaxSandboxesPerOwner > c.MaxConcurrentSandboxes {
		bad("max_sandboxes_per_owner must be between 0 (no cap) and max_concurrent_sandboxes (%d), got %d", c.MaxConcurrentSandboxes, c.MaxSandboxesPerOwner)
	}
	if c.MaxConcurrentExecPerOwner < 0 || c.MaxConcurrentExecPerOwner > 100_000 {
		bad("max_concurrent_exec_per_owner must be between 0 (no cap) and 100000, got %d", c.MaxConcurrentExecPerOwner)
	}
	return errs
}

// MultiOwner reports whether the daemon serves several owners: it has
// api_tokens.
func (c *Config) MultiOwner() bool { return len(c.APITokens) > 0 }

// IsAdmin reports whether owner may do operator actions (image pull and
// remove): any caller without api_tokens, else an owner in admin_owners.
func (c *Config) IsAdmin(owner string) bool {
	return !c.MultiOwner() || slices.Contains(c.AdminOwners, owner)
}

// Forwardable reports whether a port named in a create-time env URL may be
// forwarded to a network sandbox: every port for the one local user unless
// forwardable_ports is set; with api_tokens only forwardable_ports and
// gateway_ports.
func (c *Config) Forwardable(port int) bool {
	if !c.MultiOwner() && len(c.ForwardablePorts) == 0 {
		return true
	}
	return slices.Contains(c.ForwardablePorts, port) || slices.Contains(c.GatewayPorts, port)
}
