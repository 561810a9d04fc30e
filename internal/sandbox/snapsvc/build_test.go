package snapsvc

import (
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// TestBuildEgress: a build's egress policy is its RUN steps' sandboxes'
// (with a network), not without one.
func TestBuildEgress(t *testing.T) {
	for _, tt := range []struct {
		name   string
		egress *api.EgressPolicy
	}{
		{"with a policy", &api.EgressPolicy{AllowOut: []string{"pypi.org:443"}}},
		{"without", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, core := onFake(t, t.TempDir(), 1)
			_, err := s.BuildTemplate(as("alice"), api.TemplateBuildRequest{Name: "web", Dockerfile: "FROM python\nRUN pip install flask\n", Egress: tt.egress},
				func(api.TemplateBuildEvent) error { return nil })
			// The fake boots nothing: the step cannot run, its request is
			// what counts.
			if err == nil {
				t.Fatal("the build ran a step on the fake")
			}
			if len(core.created) != 1 {
				t.Fatalf("%d sandboxes created, want the RUN step's", len(core.created))
			}
			req := core.created[0].req
			if req.Egress != tt.egress || req.Network != (tt.egress != nil) {
				t.Errorf("the RUN step's sandbox: network %v, egress %+v", req.Network, req.Egress)
			}
		})
	}
}
