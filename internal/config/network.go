package config

import (
	"fmt"
	"net/netip"
	"net/url"

	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// DefaultNetworkPool is network_pool's default.
const DefaultNetworkPool = "10.200.0.0/16"

// validateNetwork checks network_pool, gateway_ports, package_indexes and
// preview_domain.
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
	for key, raw := range map[string]string{"pip": c.PackageIndexes.Pip, "npm": c.PackageIndexes.Npm} {
		if u, err := url.Parse(raw); raw != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			errs = append(errs, fmt.Errorf("package_indexes.%s %q must be an http or https URL", key, raw))
		}
	}
	if c.PreviewDomain != "" {
		if err := previewhost.CheckDomain(c.PreviewDomain); err != nil {
			errs = append(errs, fmt.Errorf("preview_domain %w", err))
		}
	}
	return errs
}

// PackageIndexes are the package_indexes block: the URL of a PEP 503
// ("simple") index for pip and of a registry for npm.
type PackageIndexes struct {
	Pip string `yaml:"pip"`
	Npm string `yaml:"npm"`
}

// URLs lists the indexes configured.
func (p PackageIndexes) URLs() []string {
	var out []string
	for _, u := range []string{p.Pip, p.Npm} {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}
