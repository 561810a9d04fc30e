package spec

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestLimits: an unset cpus or memory takes the default; per_image_caps
// and the host bound what a create asks (S400), the sanity bounds what it
// may ask at all (S001).
func TestLimits(t *testing.T) {
	cfg := config.Default()
	cfg.PerImageCaps = map[string]config.ImageCaps{"node": {MaxCPUs: 1, MaxMemoryMB: 256}}
	if cpus, mem, err := Limits(cfg, api.CreateRequest{Image: "python"}); err != nil || cpus != cfg.DefaultCPUs || mem != cfg.DefaultMemoryMB {
		t.Errorf("defaults: %d, %d, %v; want %d, %d", cpus, mem, err, cfg.DefaultCPUs, cfg.DefaultMemoryMB)
	}
	if _, _, err := Limits(cfg, api.CreateRequest{Image: "node", MemoryMB: 512}); !errdefs.Is(err, errdefs.CodeCapacity) || !strings.Contains(err.Error(), "cap of 256 for image node") {
		t.Errorf("over the image's cap: %v, want S400", err)
	}
	hostCPUs, _ := HostCapacity()
	if _, _, err := Limits(cfg, api.CreateRequest{Image: "python", CPUs: uint32(hostCPUs + 1)}); !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Errorf("over the host's CPUs: %v, want S400", err)
	}
	if _, _, err := Limits(cfg, api.CreateRequest{Image: "python", MemoryMB: 1}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("1 MiB: %v, want S001", err)
	}
}
