package egress

import (
	"net/http"
	"net/netip"
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

func TestProxyDecisions(t *testing.T) {
	pol, err := Compile(&api.EgressPolicy{
		AllowOut: []string{"allowed.test", "*.api.test:8443", "10.1.0.0/16"},
		DenyOut:  []string{"denied.allowed.test", "bad.api.test", "10.1.9.0/24:443"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.ProxyPorts(); !slices.Equal(got, []uint16{80, 443, 8443}) {
		t.Errorf("proxy ports %v", got)
	}
	for _, tc := range []struct {
		name       string
		port       uint16
		allow, cid bool
		rule       string
	}{
		{"Allowed.test.", 443, true, false, "allow_out allowed.test"},
		{"x.api.test", 8443, true, false, "allow_out *.api.test:8443"},
		{"x.api.test", 443, false, true, ""},
		{"bad.api.test", 8443, false, false, "deny_out bad.api.test"},
		{"other.test", 80, false, true, ""},
	} {
		d := pol.AdmitName(tc.name, tc.port)
		if d.Allow != tc.allow || d.ByAddress != tc.cid || d.Rule != tc.rule {
			t.Errorf("AdmitName(%s, %d) = %+v", tc.name, tc.port, d)
		}
	}
	for _, tc := range []struct {
		addr  string
		port  uint16
		allow bool
	}{{"10.1.2.3", 443, true}, {"10.1.9.3", 443, false}, {"10.1.9.3", 80, true}, {"10.2.0.1", 80, false}} {
		if d := pol.AdmitAddr(netip.MustParseAddr(tc.addr), tc.port); d.Allow != tc.allow {
			t.Errorf("AdmitAddr(%s, %d) = %+v", tc.addr, tc.port, d)
		}
	}
	deny, _ := Compile(&api.EgressPolicy{DenyOut: []string{"*.bad.test"}})
	if d := deny.AdmitName("x.bad.test", 443); d.Allow {
		t.Error("a deny-only policy admitted a denied name")
	}
	if d := deny.AdmitName("good.test", 443); !d.Allow {
		t.Error("a deny-only policy refused another name")
	}
	if plain, _ := Compile(&api.EgressPolicy{AllowOut: []string{"10.0.0.0/8"}}); plain.Named() || plain.ProxyPorts() != nil {
		t.Error("a policy without names goes through the proxy")
	}
}

func TestTransforms(t *testing.T) {
	pol, err := Compile(&api.EgressPolicy{Transforms: []api.EgressTransform{
		{Host: "api.test", Headers: map[string]string{"authorization": "Bearer {{secret.KEY}}"}},
		{Host: "*.test", Headers: map[string]string{"X-Other": "{{ secret.other-key }}"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !pol.Named() || !slices.Equal(pol.ProxyPorts(), []uint16{80, 443}) {
		t.Error("transforms alone do not go through the proxy")
	}
	if d := pol.AdmitName("anything.example", 443); !d.Allow {
		t.Error("transforms restrict")
	}
	tr := pol.TransformFor("API.test")
	if tr == nil || !slices.Equal(tr.Secrets(), []string{"KEY"}) {
		t.Fatalf("the exact host's transform: %+v", tr)
	}
	if w := pol.TransformFor("x.test"); w == nil || !slices.Equal(w.Secrets(), []string{"other-key"}) {
		t.Fatalf("the wildcard's transform: %+v", w)
	}
	if pol.TransformFor("test") != nil || pol.TransformFor("example.org") != nil {
		t.Error("a transform for a host it does not name")
	}
	values := map[string]string{"KEY": "s3cret"}
	h := http.Header{"X-Key": {"k=" + api.SecretPlaceholder("KEY")}, "X-Keep": {api.SecretPlaceholder("other")}}
	used, err := tr.Apply(h, func(n string) (string, bool) { v, ok := values[n]; return v, ok })
	if err != nil || !slices.Equal(used, []string{"KEY"}) {
		t.Fatalf("Apply: %v %v", used, err)
	}
	if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Key") != "k=s3cret" || h.Get("X-Keep") != api.SecretPlaceholder("other") {
		t.Errorf("headers after Apply: %v", h)
	}
	if _, err := tr.Apply(http.Header{}, func(string) (string, bool) { return "", false }); err == nil {
		t.Error("an unknown secret was sent as nothing")
	}
	for _, bad := range []api.EgressTransform{
		{Host: "1.2.3.4", Headers: map[string]string{"A": "b"}},
		{Host: "api.test:443", Headers: map[string]string{"A": "b"}},
		{Host: "api.test"},
		{Host: "api.test", Headers: map[string]string{"Bad Name": "b"}},
		{Host: "api.test", Headers: map[string]string{"A": "{{secrets.X}}"}},
		{Host: "api.test", Headers: map[string]string{"A": "a\nb"}},
	} {
		if _, err := Compile(&api.EgressPolicy{Transforms: []api.EgressTransform{bad}}); err == nil {
			t.Errorf("transform %+v compiled", bad)
		}
	}
}
