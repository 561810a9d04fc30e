package api

import (
	"strings"
	"testing"
)

func TestParseToolSet(t *testing.T) {
	tests := []struct {
		spec string
		// in are area:default pairs in the set, out those not.
		in, out []string
		wantErr string
	}{
		{spec: "", in: []string{"git:true"}, out: []string{"git:false", "env:false"}},
		{spec: "default", in: []string{"files:true"}, out: []string{"files:false"}},
		{spec: "all", in: []string{"env:false", "jobs:true"}},
		{spec: "env, volumes", in: []string{"env:false", "volumes:false"}, out: []string{"git:true", "jobs:false"}},
		{spec: "default,jobs", in: []string{"jobs:false", "git:true"}, out: []string{"env:false"}},
		{spec: "default,nope", wantErr: `unknown tool set "nope": give all, default or areas (sandboxes, exec,`},
		{spec: ",", wantErr: `unknown tool set ""`},
	}
	for _, tt := range tests {
		s, err := ParseToolSet(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.spec, err)
		}
		for want, list := range map[bool][]string{true: tt.in, false: tt.out} {
			for _, pair := range list {
				area, def, _ := strings.Cut(pair, ":")
				if got := s.Has(area, def == "true"); got != want {
					t.Errorf("%q has %s: %v", tt.spec, pair, got)
				}
			}
		}
	}
}
