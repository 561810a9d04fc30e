package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// ClusterCreator makes sandbox::create's sandboxes in cluster mode
// (issue 36, internal/clusterapi): as Pods the scheduler places on any
// node. handled is false for a create it leaves to this daemon (a node's
// own create for a Pod it runs).
type ClusterCreator interface {
	Create(ctx context.Context, req api.CreateRequest) (resp api.CreateResponse, handled bool, err error)
}
