package e2bapi

import (
	"reflect"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// privateSandbox says sbID's ports are private.
type privateSandbox struct{}

func (privateSandbox) Private(id string) bool { return id == sbID }

// TestPreviewTrafficToken: a port of a sandbox but envd's and the
// interpreter's, by headers or by host: the sandbox's traffic token passes
// it on with a grant for its owner (the token removed); another token is
// 403; without one a private sandbox's is 403 and another's passes on
// without a grant.
func TestPreviewTrafficToken(t *testing.T) {
	s := testSigner(t)
	traffic := s.Token(kindTraffic, "alice", sbID)
	byHeaders := func(token string) map[string]string {
		h := map[string]string{api.HeaderE2BSandboxID: sbID, api.HeaderE2BSandboxPort: "8080"}
		if token != "" {
			h[api.HeaderE2BTrafficToken] = token
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		private bool
		host    string
		header  map[string]string
		status  int
		grant   bool
	}{
		{"private with the token", true, "", byHeaders(traffic), 418, true},
		{"private with the token, by host", true, "8080-" + sbID + ".e2b.example.com", map[string]string{api.HeaderE2BTrafficToken: traffic}, 418, true},
		{"private without a token", true, "", byHeaders(""), 403, false},
		{"private without a token, by host", true, "8080-" + sbID + ".e2b.example.com", nil, 403, false},
		{"private with the envd token", true, "", byHeaders(s.Token(kindEnvd, "alice", sbID)), 403, false},
		{"private with another sandbox's token", true, "", byHeaders(s.Token(kindTraffic, "alice", "other")), 403, false},
		{"public without a token", false, "", byHeaders(""), 418, false},
		{"public with a bad token", false, "", byHeaders(traffic + "x"), 403, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := keyed(Options{PreviewDomain: "e2b.example.com"})
			if tc.private {
				opts.Previews = privateSandbox{}
			}
			srv, passed := serve(t, owners("running"), opts)
			if status := statusOf(t, srv, "GET", "/x", tc.host, tc.header); status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if tc.status != 418 {
				return
			}
			r := (*passed)[0]
			id, owner, ok := previewhost.GrantOf(r.Context())
			if ok != tc.grant || (ok && (id != sbID || owner != "alice")) || r.Header.Get(api.HeaderE2BTrafficToken) != "" {
				t.Fatalf("passed on with grant %q %q %v, headers %v", id, owner, ok, r.Header)
			}
		})
	}
}

func TestPreviewTerms(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		in   *networkConfig
		want *api.PreviewOptions
	}{
		{nil, nil},
		{&networkConfig{}, nil},
		{&networkConfig{AllowPublicTraffic: &yes}, nil},
		{&networkConfig{AllowPublicTraffic: &no}, &api.PreviewOptions{Private: true}},
		{&networkConfig{MaskRequestHost: "h.test:${PORT}"}, &api.PreviewOptions{HostHeader: "h.test:${PORT}"}},
	} {
		if got := tc.in.preview(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if _, err := (&networkUpdate{networkConfig: networkConfig{AllowPublicTraffic: &no}}).networkConfig.egress(); err != nil {
		t.Errorf("egress of a create's allowPublicTraffic: %v", err)
	}
}

// TestNetworkOf: getInfo's network block answers the egress policy (a
// transform's secret as E2B's placeholder) and the preview terms, and
// allowPublicTraffic true by default.
func TestNetworkOf(t *testing.T) {
	n := networkOf(api.SandboxInfo{})
	if n.AllowPublicTraffic == nil || !*n.AllowPublicTraffic || n.MaskRequestHost != "" || n.Rules != nil {
		t.Errorf("defaults: %+v", n)
	}
	n = networkOf(api.SandboxInfo{
		Preview: &api.PreviewOptions{HostHeader: "app.test:${PORT}", Private: true},
		Egress: &api.EgressPolicy{AllowOut: []string{"api.test"}, DenyOut: []string{"10.0.0.0/8"},
			Transforms: []api.EgressTransform{{Host: "api.test", Headers: map[string]string{"Authorization": "Bearer {{secret.key}}"}}}},
	})
	if *n.AllowPublicTraffic || n.MaskRequestHost != "app.test:${PORT}" || !reflect.DeepEqual(n.AllowOut, []string{"api.test"}) || !reflect.DeepEqual(n.DenyOut, []string{"10.0.0.0/8"}) {
		t.Errorf("terms: %+v", n)
	}
	if r := n.Rules["api.test"]; len(r) != 1 || r[0].Transform.Headers["Authorization"] != "Bearer ${e2b.secrets.key}" {
		t.Errorf("rules: %+v", n.Rules)
	}
}
