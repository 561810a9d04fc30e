package gvisor

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestNprocLimit(t *testing.T) {
	tests := []struct {
		pids int64
		want uint64
	}{
		{0, 0},
		{64, minNproc},
		{1024, 248},
		{4096, 1016},
	}
	for _, tt := range tests {
		if got := nprocLimit(tt.pids); got != tt.want {
			t.Errorf("nprocLimit(%d) = %d, want %d", tt.pids, got, tt.want)
		}
		// The worst case measured, 3 host tasks per task plus the runtime's
		// own, stays under the pids limit.
		if tt.pids > 0 && int64(tt.want)*3+25 > tt.pids && tt.want != minNproc {
			t.Errorf("pids_limit %d: %d tasks may need more host tasks than allowed", tt.pids, tt.want)
		}
	}
	if rl := processLimits(runtime.Spec{PidsLimit: 1024}); len(rl) != 1 || rl[0].Type != "RLIMIT_NPROC" || rl[0].Hard != 248 || rl[0].Soft != 248 {
		t.Errorf("processLimits = %+v", rl)
	}
	if rl := processLimits(runtime.Spec{}); rl != nil {
		t.Errorf("processLimits without a pids limit = %+v", rl)
	}
}

func TestOverlayFlag(t *testing.T) {
	tests := []struct {
		mb   uint64
		want string
	}{
		{0, "--overlay2=root:dir=/b/x"},
		{64, "--overlay2=root:dir=/b/x,size=64m"},
	}
	for _, tt := range tests {
		if got := overlayFlag(runtime.Spec{WritableLayerMB: tt.mb}, "/b/x"); got != tt.want {
			t.Errorf("overlayFlag(%d) = %q, want %q", tt.mb, got, tt.want)
		}
	}
}
