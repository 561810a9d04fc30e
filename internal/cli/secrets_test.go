package cli

import (
	"testing"

	"github.com/hutch-dev/hutch/api"
)

func TestTransformFlag(t *testing.T) {
	var list []api.EgressTransform
	f := transformFlag{&list}
	for _, s := range []string{"api.test:Authorization=Bearer {{secret.K}}", "api.test:X-A=b=c", "*.other.test:X-B=1"} {
		if err := f.Set(s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	if len(list) != 2 || list[0].Headers["Authorization"] != "Bearer {{secret.K}}" || list[0].Headers["X-A"] != "b=c" || list[1].Host != "*.other.test" {
		t.Errorf("transforms: %+v", list)
	}
	for _, bad := range []string{"api.test", "api.test:NoValue", ":A=b", "api.test:=b"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}
