package cli

import (
	"testing"

	"github.com/hutch-dev/hutch/api"
)

func TestParseVolumeFlag(t *testing.T) {
	for in, want := range map[string]api.VolumeMount{
		"data:/data":       {Name: "data", Path: "/data"},
		"data:/data:ro":    {Name: "data", Path: "/data", ReadOnly: true},
		"data:/data:rw":    {Name: "data", Path: "/data"},
		"data:/a:b":        {Name: "data", Path: "/a:b"},
		"data:relative/ro": {Name: "data", Path: "relative/ro"},
	} {
		got, err := parseVolumeFlag(in)
		if err != nil || got != want {
			t.Errorf("parseVolumeFlag(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "data", "data:", ":/data"} {
		if _, err := parseVolumeFlag(bad); err == nil {
			t.Errorf("parseVolumeFlag(%q) took it", bad)
		}
	}
}
