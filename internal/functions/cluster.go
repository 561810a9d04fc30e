package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Cluster is cluster mode's part in the table (issue 36,
// internal/clusterapi): sandbox::create's sandboxes as Pods the scheduler
// places on any node, and sandbox::list over every node.
type Cluster interface {
	// Create makes the sandbox in the cluster; handled is false for a
	// create it leaves to this daemon (a node's own create for a Pod it
	// runs).
	Create(ctx context.Context, req api.CreateRequest) (resp api.CreateResponse, handled bool, err error)
	// List is the caller's sandboxes on every node, local listing this
	// node's.
	List(ctx context.Context, req api.ListRequest, local func(context.Context, api.ListRequest) (api.ListResponse, error)) (api.ListResponse, error)
}

// list is sandbox::list: this daemon's sandboxes, or in cluster mode every
// node's.
func (t *Table) list(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	if t.deps.Cluster != nil {
		return t.deps.Cluster.List(ctx, req, t.deps.Sandboxes.List)
	}
	return t.deps.Sandboxes.List(ctx, req)
}
