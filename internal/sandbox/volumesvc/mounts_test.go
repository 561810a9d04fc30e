package volumesvc

import (
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestValidateMounts(t *testing.T) {
	ok := [][]api.VolumeMount{
		{{Name: "a", Path: "/data"}},
		{{Name: "a", Path: "/data"}, {Name: "b", Path: "/data2"}},
		{{Name: "a", Path: "/home/user/work", ReadOnly: true}, {Name: "a", Path: "/srv"}},
		{{Name: "a", Path: "/tmp/x"}, {Name: "b", Path: "/procs"}, {Name: "c", Path: "/.hutchy"}},
	}
	for _, m := range ok {
		if err := ValidateMounts(m); err != nil {
			t.Errorf("ValidateMounts(%+v) = %v", m, err)
		}
	}
	bad := map[string][]api.VolumeMount{
		"relative":          {{Name: "a", Path: "data"}},
		"empty":             {{Name: "a", Path: ""}},
		"trailing slash":    {{Name: "a", Path: "/data/"}},
		"dot dot":           {{Name: "a", Path: "/data/../etc"}},
		"double slash":      {{Name: "a", Path: "//data"}},
		"root":              {{Name: "a", Path: "/"}},
		"proc":              {{Name: "a", Path: "/proc"}},
		"in dev":            {{Name: "a", Path: "/dev/shm"}},
		"in sys":            {{Name: "a", Path: "/sys/fs"}},
		"agent dir":         {{Name: "a", Path: "/.hutch"}},
		"agent":             {{Name: "a", Path: runtime.AgentPath}},
		"control character": {{Name: "a", Path: "/da\nta"}},
		"same path":         {{Name: "a", Path: "/data"}, {Name: "b", Path: "/data"}},
		"nested":            {{Name: "a", Path: "/data"}, {Name: "b", Path: "/data/sub"}},
		"nested first":      {{Name: "a", Path: "/data/sub"}, {Name: "b", Path: "/data"}},
	}
	for what, m := range bad {
		if err := ValidateMounts(m); !errdefs.Is(err, errdefs.CodeVolumeMount) {
			t.Errorf("%s: ValidateMounts(%+v) = %v, want S264", what, m, err)
		}
	}
	if err := ValidateMounts([]api.VolumeMount{{Name: "Bad", Path: "/data"}}); !errdefs.Is(err, errdefs.CodeVolumeInvalid) {
		t.Errorf("bad name: %v, want S263", err)
	}
	many := make([]api.VolumeMount, MaxMounts+1)
	for i := range many {
		many[i] = api.VolumeMount{Name: "a", Path: "/v" + string(rune('a'+i))}
	}
	if err := ValidateMounts(many); !errdefs.Is(err, errdefs.CodeVolumeMount) {
		t.Errorf("%d mounts: %v, want S264", len(many), err)
	}
}
