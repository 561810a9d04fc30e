package sandbox

import (
	"context"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// TestCreateOverHostCapacity checks that a create asking for more CPUs or
// memory than the host has is refused with S400 and the host's figures.
func TestCreateOverHostCapacity(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	cpus, memMB := spec.HostCapacity()
	if cpus != goruntime.NumCPU() || memMB < 32 {
		t.Fatalf("host capacity %d CPUs, %d MiB", cpus, memMB)
	}
	for name, tt := range map[string]struct {
		req  api.CreateRequest
		want string
	}{
		"cpus":   {api.CreateRequest{Image: "python", CPUs: uint32(cpus + 1)}, "the " + strconv.Itoa(cpus) + " CPUs this host has"},
		"memory": {api.CreateRequest{Image: "python", MemoryMB: uint32(memMB + 1)}, "the " + strconv.FormatUint(memMB, 10) + " MiB of memory this host has"},
	} {
		_, err := m.Create(context.Background(), tt.req)
		if !errdefs.Is(err, errdefs.CodeCapacity) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: create %+v: %v; want S400 saying %q", name, tt.req, err, tt.want)
		}
	}
	// What the host has is allowed.
	create(t, m, api.CreateRequest{Image: "python", CPUs: uint32(cpus)})
}
