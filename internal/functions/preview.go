package functions

// sandbox::create's preview terms (api.CreateRequest.Preview, issue 37),
// given to the port service once the sandbox is made, answered by
// sandbox::get and sandbox::list (api.SandboxInfo.Preview), and given to
// each copy of a sandbox::fork.

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// PreviewTerms is the port service's part in a create's preview terms.
type PreviewTerms interface {
	// CheckPreview explains what is wrong with o (S001).
	CheckPreview(o api.PreviewOptions) error
	// SetPreview gives sandbox id, the caller's, the terms o.
	SetPreview(ctx context.Context, id string, o api.PreviewOptions) error
	// Preview is the terms of sandbox id, which the caller was admitted
	// to (the zero terms for the defaults).
	Preview(id string) api.PreviewOptions
}

// create is sandbox::create: the sandbox, then its preview terms; a
// request whose terms are wrong makes nothing, and a sandbox that cannot
// take them is stopped.
func (t *Table) create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	if t.deps.Cluster != nil { // issue 36: cluster mode
		if res, ok, err := t.deps.Cluster.Create(ctx, req); ok {
			return res, err
		}
	}
	if req.Preview == nil {
		return t.deps.Sandboxes.Create(ctx, req)
	}
	terms, ok := t.deps.Ports.(PreviewTerms)
	if !ok {
		return api.CreateResponse{}, errdefs.Malformed("preview: this daemon serves no previews")
	}
	if err := terms.CheckPreview(*req.Preview); err != nil {
		return api.CreateResponse{}, err
	}
	res, err := t.deps.Sandboxes.Create(ctx, req)
	if err != nil {
		return res, err
	}
	if err := terms.SetPreview(ctx, res.SandboxID, *req.Preview); err != nil {
		_, _ = t.deps.Sandboxes.Stop(context.WithoutCancel(ctx), api.StopRequest{SandboxID: res.SandboxID})
		return api.CreateResponse{}, err
	}
	return res, nil
}

// get is sandbox::get with the sandbox's preview terms.
func (t *Table) get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	info, err := t.deps.Sandboxes.Get(ctx, req)
	if err == nil {
		t.withPreview(&info)
	}
	return info, err
}

// localList is this daemon's sandbox::list with each sandbox's preview
// terms.
func (t *Table) localList(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	res, err := t.deps.Sandboxes.List(ctx, req)
	for i := range res.Sandboxes {
		t.withPreview(&res.Sandboxes[i])
	}
	return res, err
}

// withPreview sets info's preview terms, unless they are the defaults.
func (t *Table) withPreview(info *api.SandboxInfo) {
	terms, ok := t.deps.Ports.(PreviewTerms)
	if !ok {
		return
	}
	if o := terms.Preview(info.SandboxID); o != (api.PreviewOptions{}) {
		info.Preview = &o
	}
}

// fork is sandbox::fork whose copies get the source's preview terms: a
// copy of a private sandbox is private. Copies that cannot take them are
// stopped and the fork fails.
func (t *Table) fork(ctx context.Context, req api.ForkRequest) (api.ForkResponse, error) {
	var o api.PreviewOptions
	terms, ok := t.deps.Ports.(PreviewTerms)
	if ok {
		src, err := t.deps.Sandboxes.Get(ctx, api.GetRequest{SandboxID: req.SandboxID})
		if err != nil {
			return api.ForkResponse{}, err
		}
		o = terms.Preview(src.SandboxID)
	}
	res, err := t.deps.Snapshots.Fork(ctx, req)
	if err != nil || o == (api.PreviewOptions{}) {
		return res, err
	}
	for _, id := range res.SandboxIDs {
		if err = terms.SetPreview(ctx, id, o); err != nil {
			break
		}
	}
	if err != nil {
		for _, id := range res.SandboxIDs {
			_, _ = t.deps.Sandboxes.Stop(context.WithoutCancel(ctx), api.StopRequest{SandboxID: id})
		}
		return api.ForkResponse{}, err
	}
	return res, nil
}
