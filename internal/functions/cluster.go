package functions

import (
	"context"
	"reflect"

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
	// Forward runs function fn on req on the node that holds the sandbox
	// req names, when another node does, decoding its answer as a resp;
	// handled is false when this node is to run it.
	Forward(ctx context.Context, fn string, req any, resp reflect.Type) (res any, handled bool, err error)
	// ForwardStream is Forward of a streaming function: res is a *Stream
	// of the holding node's events (or its one value, when the request
	// did not ask for a stream).
	ForwardStream(ctx context.Context, fn string, req any, resp reflect.Type) (res any, handled bool, err error)
}

// forwarded is typed, run on the node holding the sandbox its request
// names in cluster mode (MCP's tools, the engine's calls, E2B's envd:
// every transport that calls the table here), its streams too. Streamed
// bodies are this node's.
func forwarded[Req any](t *Table, f Function, typed func(context.Context, Req) (any, error)) func(context.Context, Req) (any, error) {
	if t.deps.Cluster == nil || f.TakesBody || f.GivesBody {
		return typed
	}
	forward := t.deps.Cluster.Forward
	if f.Streams {
		forward = t.deps.Cluster.ForwardStream
	}
	return func(ctx context.Context, req Req) (any, error) {
		if res, ok, err := forward(ctx, f.ID, req, f.Response); ok {
			t.observe(f.ID, err)
			return res, err
		}
		return typed(ctx, req)
	}
}

// list is sandbox::list: this daemon's sandboxes, or in cluster mode every
// node's.
func (t *Table) list(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	if t.deps.Cluster != nil {
		return t.deps.Cluster.List(ctx, req, t.localList)
	}
	return t.localList(ctx, req)
}
