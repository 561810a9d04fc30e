package egress

import (
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

func TestCompile(t *testing.T) {
	pol, err := Compile(&api.EgressPolicy{
		AllowOut: []string{"10.0.0.0/8", "1.2.3.4:443", "PyPI.org", "*.github.com:443", "files.pythonhosted.org."},
		DenyOut:  []string{"evil.pypi.org", "10.9.0.0/16"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !pol.addrs.Restricted || len(pol.addrs.Allow) != 2 || len(pol.addrs.Deny) != 1 || pol.addrs.Allow[1].Port != 443 {
		t.Fatalf("address rules: %+v", pol.addrs)
	}
	for _, tc := range []struct {
		name   string
		refuse bool
		ports  []uint16
	}{
		{"pypi.org", false, []uint16{0}},
		{"evil.pypi.org", true, nil},
		{"api.github.com", false, []uint16{443}},
		{"github.com", true, nil}, // "*." is the names under it
		{"files.pythonhosted.org", false, []uint16{0}},
		{"example.com", true, nil},
	} {
		v := pol.Verdict(tc.name)
		if v.Refuse != tc.refuse || !slices.Equal(v.Ports, tc.ports) {
			t.Errorf("check(%s) = %+v, want refuse %v ports %v", tc.name, v, tc.refuse, tc.ports)
		}
	}
	denyOnly, err := Compile(&api.EgressPolicy{DenyOut: []string{"*.example.com"}})
	if err != nil || denyOnly.addrs.Restricted {
		t.Fatalf("deny only: %+v, %v", denyOnly, err)
	}
	if v := denyOnly.Verdict("pypi.org"); v.Refuse || len(v.Ports) > 0 {
		t.Errorf("deny only lets every other name through without learning: %+v", v)
	}
	if v := denyOnly.Verdict("a.example.com"); !v.Refuse {
		t.Errorf("deny only refuses what it names: %+v", v)
	}
	if p, err := Compile(&api.EgressPolicy{}); p != nil || err != nil {
		t.Errorf("empty policy: %+v, %v", p, err)
	}
	for _, bad := range []string{"256.1.1.1", "fd00::/8", "::1", "-bad-.example", "example.com:0", "example.com:70000", "a b", "*.", "", "x..y"} {
		if _, err := Compile(&api.EgressPolicy{AllowOut: []string{bad}}); err == nil {
			t.Errorf("Compile accepted %q", bad)
		}
	}
	many := make([]string, maxRules+1)
	for i := range many {
		many[i] = "example.com"
	}
	if _, err := Compile(&api.EgressPolicy{DenyOut: many}); err == nil {
		t.Error("a policy past maxRules was accepted")
	}
}
