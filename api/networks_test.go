package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestCreateRequestNetwork(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		network bool
		allow   []string
	}{
		{`{"image":"python","network":true}`, `{"image":"python","network":true}`, true, nil},
		{`{"network":false}`, `{}`, false, nil},
		{`{"network":null}`, `{}`, false, nil},
		{`{"network":{"allow_out":["pypi.org:443"]}}`, `{"network":{"allow_out":["pypi.org:443"]}}`, true, []string{"pypi.org:443"}},
		{`{"network":{}}`, `{"network":true}`, true, nil},
	} {
		var r CreateRequest
		if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		var allow []string
		if r.Egress != nil {
			allow = r.Egress.AllowOut
		}
		if r.Network != tc.network || !slices.Equal(allow, tc.allow) {
			t.Errorf("%s: network %v, egress %+v", tc.in, r.Network, r.Egress)
		}
		if b, _ := json.Marshal(r); string(b) != tc.out {
			t.Errorf("%s marshals as %s, want %s", tc.in, b, tc.out)
		}
	}
	for in, want := range map[string]string{
		`{"network":"yes"}`:           "network must be true, false or an object",
		`{"network":{"allow":["x"]}}`: `unknown field "allow"`,
		`{"network":true,"netwrk":1}`: `unknown field "netwrk"`,
		`{"image":3}`:                 `createRequestPlain.image`,
	} {
		var r CreateRequest
		if err := json.Unmarshal([]byte(in), &r); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", in, err, want)
		}
	}
}
