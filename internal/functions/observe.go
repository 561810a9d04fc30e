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

func (t *Table) observe(id string, err error) {
	if t.deps.Observer != nil {
		t.deps.Observer.Called(id, err)
	}
}

// SandboxMetrics is a manager's per-sandbox resource use
// (Deps.Metrics): sandbox::metrics.
type SandboxMetrics interface {
	Metrics(ctx context.Context, req api.MetricsRequest) (api.MetricsResponse, error)
}

// registerMetrics adds sandbox::metrics when the table has Metrics.
func registerMetrics(t *Table) {
	if m := t.deps.Metrics; m != nil {
		add(t, "sandbox::metrics", "Resource use of a live sandbox from its cgroups: cpu, memory, pids (hutch extension)", m.Metrics)
	}
}
