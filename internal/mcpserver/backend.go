package mcpserver

import (
	"context"
	"encoding/json"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Table is the daemon's backend: its function table, acting for Owner.
// Errors come back as envelopes, as over the API.
type Table struct {
	T     *functions.Table
	Owner string
}

func (b Table) ctx(ctx context.Context) context.Context { return auth.WithOwner(ctx, b.Owner) }

// Call runs function id.
func (b Table) Call(ctx context.Context, id string, req, out any) error {
	res, err := b.call(ctx, id, req)
	if err != nil {
		return envelopeError(err)
	}
	return recode(res, out)
}

// Stream runs streaming function id.
func (b Table) Stream(ctx context.Context, id string, req any, on func(event string, data json.RawMessage) error, out any) error {
	res, err := b.call(ctx, id, req)
	if err != nil {
		return envelopeError(err)
	}
	st, ok := res.(*functions.Stream)
	if !ok {
		return recode(res, out)
	}
	defer st.Close()
	for {
		ev, err := st.Next(ctx)
		if err == io.EOF {
			return recode(st.Result(), out)
		}
		if err != nil {
			return envelopeError(err)
		}
		data, err := api.Marshal(ev.Data)
		if err != nil {
			return err
		}
		if err := on(ev.Type, data); err != nil {
			return err
		}
	}
}

// call runs function id on a typed request, or on a JSON payload (a
// generated tool's), decoded strictly as any transport's.
func (b Table) call(ctx context.Context, id string, req any) (any, error) {
	if payload, ok := req.(json.RawMessage); ok {
		return b.T.Call(b.ctx(ctx), id, payload, functions.Params{})
	}
	return functions.Call[any](b.ctx(ctx), b.T, id, req)
}

// Functions describes the table's functions.
func (b Table) Functions(context.Context) ([]api.FunctionInfo, error) {
	return describe(b.T), nil
}

// describe describes t's functions.
func describe(t *functions.Table) []api.FunctionInfo {
	fns := t.Functions()
	out := make([]api.FunctionInfo, 0, len(fns))
	for _, f := range fns {
		out = append(out, f.Info())
	}
	return out
}

// recode turns a function's result into out, as a client would decode it.
func recode(res, out any) error {
	b, err := api.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func envelopeError(err error) error {
	env := envelope.From(err)
	return &env
}

// Client is `hutch mcp`'s backend: the daemon's HTTP API.
type Client struct{ C *client.Client }

// Call runs function id.
func (b Client) Call(ctx context.Context, id string, req, out any) error {
	return b.C.Call(ctx, id, req, out)
}

// Stream runs streaming function id.
func (b Client) Stream(ctx context.Context, id string, req any, on func(event string, data json.RawMessage) error, out any) error {
	return b.C.CallStream(ctx, id, req, on, out)
}

// Functions describes the daemon's functions.
func (b Client) Functions(ctx context.Context) ([]api.FunctionInfo, error) {
	res, err := b.C.Functions(ctx)
	return res.Functions, err
}
