package config

import (
	"strings"
	"testing"
)

func TestNetworkKeys(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // substring of the error; "" means valid
	}{
		{"defaults", "", ""},
		{"own pool and ports", "network_pool: 172.30.0.0/20\ngateway_ports: [5432, 6379]\n", ""},
		{"not a prefix", "network_pool: nonsense\n", `network_pool must be an IPv4 prefix such as 10.200.0.0/16, got "nonsense"`},
		{"IPv6", "network_pool: fd00::/64\n", "network_pool: fd00::/64 is not an IPv4 prefix"},
		{"host bits", "network_pool: 10.200.0.1/16\n", "network_pool: 10.200.0.1/16 has host bits set"},
		{"too small", "network_pool: 10.200.0.0/31\n", "network_pool: 10.200.0.0/31 must be between /8 and /30"},
		{"loopback", "network_pool: 127.0.0.0/16\n", "overlaps the reserved range 127.0.0.0/8"},
		{"port zero", "gateway_ports: [0]\n", "gateway_ports must be TCP ports between 1 and 65535, got 0"},
		{"negative port", "gateway_ports: [80, -1]\n", "got -1"},
		{"port too big", "gateway_ports: [70000]\n", "got 70000"},
		{"preview domain", "preview_domain: preview.example.com\n", ""},
		{"preview domain with a scheme", "preview_domain: https://preview.example.com\n", `preview_domain "https://preview.example.com" is not a DNS name`},
		{"preview domain with a port", "preview_domain: 'preview.example.com:3111'\n", "is not a DNS name"},
		{"preview domain wildcard", "preview_domain: '*.example.com'\n", "is not a DNS name"},
		{"preview domain address", "preview_domain: 127.0.0.1\n", "is not a DNS name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if cfg.NetworkPool == "" {
					t.Fatal("no network_pool after Parse")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if c, err := Parse([]byte("preview_domain: Preview.Example.COM.\n")); err != nil || c.PreviewDomain != "preview.example.com" {
		t.Fatalf("preview_domain in capitals: %q %v, want it lowercased", c.PreviewDomain, err)
	}
	if Default().PreviewDomain != "" {
		t.Fatal("previews by host name are on by default")
	}
	if Default().NetworkPool != DefaultNetworkPool {
		t.Fatalf("default network_pool = %q", Default().NetworkPool)
	}
}
