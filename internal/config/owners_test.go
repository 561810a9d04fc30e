package config

import (
	"strings"
	"testing"
)

func TestOwnerKeys(t *testing.T) {
	const tokens = "api_tokens: {alice: alice-0123456789abcdef, bob: bob-0123456789abcdef00}\n"
	for _, tc := range []struct {
		name, yaml string
		want       string // substring of the error; "" means valid
	}{
		{"defaults", "", ""},
		{"admins among the owners", tokens + "admin_owners: [alice]\n", ""},
		{"admin not an owner", tokens + "admin_owners: [carol]\n", `admin_owners names "carol", which is not an owner of api_tokens`},
		{"admins without tokens", "admin_owners: [alice]\n", `admin_owners names "alice"`},
		{"forwardable ports", "forwardable_ports: [5432, 6379]\n", ""},
		{"forwardable port zero", "forwardable_ports: [0]\n", "forwardable_ports must be TCP ports between 1 and 65535, got 0"},
		{"per-owner caps", "max_sandboxes_per_owner: 4\nmax_concurrent_exec_per_owner: 8\n", ""},
		{"per-owner sandboxes over the global cap", "max_concurrent_sandboxes: 4\nmax_sandboxes_per_owner: 5\n", "max_sandboxes_per_owner must be between 0 (no cap) and max_concurrent_sandboxes (4), got 5"},
		{"negative per-owner sandboxes", "max_sandboxes_per_owner: -1\n", "got -1"},
		{"negative per-owner execs", "max_concurrent_exec_per_owner: -1\n", "max_concurrent_exec_per_owner must be between 0 (no cap) and 100000, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIsAdmin(t *testing.T) {
	local := Default()
	shared := Default()
	shared.APITokens = map[string]string{"alice": "a", "bob": "b"}
	shared.AdminOwners = []string{"alice"}
	for _, tc := range []struct {
		name  string
		cfg   Config
		owner string
		want  bool
	}{
		{"the local user without tokens", local, "", true},
		{"an admin owner", shared, "alice", true},
		{"another owner", shared, "bob", false},
		{"the anonymous owner with tokens", shared, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cfg.IsAdmin(tc.owner); got != tc.want {
				t.Fatalf("IsAdmin(%q) = %v, want %v", tc.owner, got, tc.want)
			}
		})
	}
}

func TestForwardable(t *testing.T) {
	local := Default()
	localListed := Default()
	localListed.ForwardablePorts = []int{5432}
	shared := Default()
	shared.APITokens = map[string]string{"alice": "a"}
	shared.ForwardablePorts = []int{5432}
	shared.GatewayPorts = []int{9000}
	sharedNone := Default()
	sharedNone.APITokens = map[string]string{"alice": "a"}
	for _, tc := range []struct {
		name string
		cfg  Config
		port int
		want bool
	}{
		{"one local user: any port", local, 8080, true},
		{"one local user with a list: listed", localListed, 5432, true},
		{"one local user with a list: unlisted", localListed, 8080, false},
		{"owners: listed", shared, 5432, true},
		{"owners: a gateway port", shared, 9000, true},
		{"owners: unlisted", shared, 8080, false},
		{"owners without a list: nothing", sharedNone, 8080, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cfg.Forwardable(tc.port); got != tc.want {
				t.Fatalf("Forwardable(%d) = %v, want %v", tc.port, got, tc.want)
			}
		})
	}
}
