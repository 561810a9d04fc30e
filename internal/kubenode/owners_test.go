package kubenode

import (
	"regexp"
	"testing"
)

// An owner's namespace is a DNS label, the owner itself where it can be,
// and no two owners share one.
func TestOwnerNamespace(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	long := "a234567890123456789012345678901234567890123456789012345678901234"
	cases := map[string]string{"alice": "hutch-alice", "": "", "Alice": "", "alice@example.com": "", "anonymous": "hutch-anonymous", long: "", "a-": ""}
	seen := map[string]string{}
	for owner, want := range cases {
		got := OwnerNamespace("hutch-", owner)
		if want != "" && got != want {
			t.Errorf("owner %q: namespace %q, want %q", owner, got, want)
		}
		if len(got) > 63 || !dns.MatchString(got) {
			t.Errorf("owner %q: namespace %q is not a DNS label", owner, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("owners %q and %q share namespace %q", owner, other, got)
		}
		seen[got] = owner
	}
	if OwnerLabel("alice@example.com") != "alice_example.com" {
		t.Errorf("OwnerLabel: %q", OwnerLabel("alice@example.com"))
	}
}
