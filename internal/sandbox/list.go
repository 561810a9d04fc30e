package sandbox

import (
	"context"
	"slices"
	"sort"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// List returns the caller's sandboxes, live and recently stopped, oldest (or
// newest) first, that req's filter keeps: a page with a limit, and a next token when more follow.
func (m *Manager) List(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	keep, err := spec.ListFilter(req, stateNames[:])
	if err != nil {
		return api.ListResponse{}, err
	}
	after, err := spec.ParsePageToken(req.NextToken)
	if err != nil {
		return api.ListResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	m.mu.Lock()
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		if sb.rec.Owner == owner && (after == nil || after.Precedes(keyOf(sb), req.NewestFirst)) {
			sbs = append(sbs, sb)
		}
	}
	m.mu.Unlock()
	sort.Slice(sbs, func(i, j int) bool { return keyOf(sbs[i]).Precedes(keyOf(sbs[j]), req.NewestFirst) })
	out := api.ListResponse{Sandboxes: []api.SandboxInfo{}}
	for i, sb := range sbs {
		info := sb.info(m.cfg.MaxConcurrentExecPerSandbox)
		if !keep(info) {
			continue
		}
		out.Sandboxes = append(out.Sandboxes, info)
		if req.Limit > 0 && len(out.Sandboxes) == req.Limit && slices.ContainsFunc(sbs[i+1:], func(sb *sandbox) bool { return keep(sb.info(m.cfg.MaxConcurrentExecPerSandbox)) }) {
			out.NextToken = keyOf(sb).Token()
			break
		}
	}
	return out, nil
}

// keyOf is sb's place in a listing.
func keyOf(sb *sandbox) spec.PageKey { return spec.PageKey{Created: sb.rec.CreatedAt, ID: sb.rec.ID} }
