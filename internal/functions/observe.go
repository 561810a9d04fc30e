package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Observer is told the outcome of every function call, whichever transport
// made it; internal/metrics implements it to count errors by S-code.
// Called runs on the request path and must be cheap.
type Observer interface {
	// Called reports that function id returned err (nil on success).
	Called(id string, err error)
}

// Observe makes t report every call to o. Call it before serving.
func (t *Table) Observe(o Observer) { t.obs = o }

func (t *Table) observe(id string, err error) {
	if t.obs != nil {
		t.obs.Called(id, err)
	}
}

// SandboxMetrics is a manager's per-sandbox resource use. The table
// registers sandbox::metrics when its Sandboxes implements it.
type SandboxMetrics interface {
	Metrics(ctx context.Context, req api.MetricsRequest) (api.MetricsResponse, error)
}

// addMetrics registers sandbox::metrics when sb implements SandboxMetrics.
func addMetrics(t *Table, sb Sandboxes) {
	if m, ok := sb.(SandboxMetrics); ok {
		add(t, "sandbox::metrics", "Resource use of a live sandbox from its cgroups: cpu, memory, pids (hutch extension)", m.Metrics)
	}
}
