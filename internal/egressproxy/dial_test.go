package egressproxy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

type fixedResolver map[string]netip.Addr

func (r fixedResolver) Lookup(name string, _ []string) ([]netip.Addr, time.Duration, error) {
	if a, ok := r[name]; ok {
		return []netip.Addr{a}, time.Second, nil
	}
	return nil, 0, errors.New("no such name")
}

// TestDial: hutch's own connections (a build's ADD of a URL) are refused
// as a sandbox's would be: a deny_out name, an address outside allow_out,
// loopback and the closed ranges; the refusal names the rule and keeps no
// trail.
func TestDial(t *testing.T) {
	p, err := Listen("127.0.0.1", Options{Resolver: fixedResolver{"denied.test": netip.MustParseAddr("198.51.100.7"), "pool.test": netip.MustParseAddr("10.99.0.5")},
		Closed: []netip.Prefix{netip.MustParsePrefix("10.99.0.0/16")}, Private: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deny := egress.MustCompile(&api.EgressPolicy{DenyOut: []string{"denied.test"}})
	allow := egress.MustCompile(&api.EgressPolicy{AllowOut: []string{"203.0.113.0/24"}})
	for _, tc := range []struct {
		policy *egress.Policy
		host   string
		want   string
	}{
		{deny, "denied.test", "deny_out denied.test"},
		{allow, "198.51.100.9", "allow_out (no entry admits it)"},
		{nil, "127.0.0.1", "closed address"},
		{nil, "pool.test", "closed range 10.99.0.0/16"},
		{nil, "unknown.test", "unresolvable"},
	} {
		sb := Sandbox{ID: "template-build:x", Owner: "o", Policy: tc.policy}
		_, err := p.Dial(context.Background(), sb, tc.host, 80)
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Dial(%s) = %v, want a refusal with %q", tc.host, err, tc.want)
		}
	}
	// The private ranges are closed unless the sandbox's record opens
	// them; the pool is closed either way.
	private, pool := netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("10.99.0.5")
	if got := p.closed(Sandbox{}, private); got != "closed range 192.168.0.0/16" {
		t.Errorf("a private address for a blocked sandbox: %q", got)
	}
	if got := p.closed(Sandbox{OpenPrivate: true}, private); got != "" {
		t.Errorf("a private address for an open sandbox: %q", got)
	}
	if got := p.closed(Sandbox{OpenPrivate: true}, pool); got == "" {
		t.Error("the pool opened to an open sandbox")
	}
	if got := p.Recent("template-build:x"); len(got) != 0 {
		t.Errorf("a trail kept: %+v", got)
	}
}
