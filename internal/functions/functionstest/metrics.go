package functionstest

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

var _ functions.SandboxMetrics = (*Fake)(nil)

// FakeMetrics is what the fake's Metrics answers for DefaultID.
var FakeMetrics = api.MetricsResponse{
	SandboxID: DefaultID, CPUSeconds: 1.5, MemoryBytes: 64 << 20, MemoryLimitBytes: 512 << 20,
	Pids: 25, PidsLimit: 1024, CPUs: 1, AgeSecs: 7,
}

// Metrics answers FakeMetrics for DefaultID and S002 for any other id.
func (f *Fake) Metrics(_ context.Context, req api.MetricsRequest) (api.MetricsResponse, error) {
	f.record("Metrics", req)
	if req.SandboxID != DefaultID {
		return api.MetricsResponse{}, errdefs.New(errdefs.CodeNotFound, "no live sandbox with id %s", req.SandboxID)
	}
	return FakeMetrics, nil
}
