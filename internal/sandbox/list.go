package sandbox

import (
	"context"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxListLimit bounds a list's limit.
const maxListLimit = 1000

// List returns the caller's sandboxes, live and recently stopped, oldest
// first: those req's filter keeps, a page at a time when it has a limit.
func (m *Manager) List(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	keep, err := listFilter(req)
	if err != nil {
		return api.ListResponse{}, err
	}
	after, err := parsePageToken(req.NextToken)
	if err != nil {
		return api.ListResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	m.mu.Lock()
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		if sb.rec.Owner == owner && (after == nil || after.less(keyOf(sb))) {
			sbs = append(sbs, sb)
		}
	}
	m.mu.Unlock()
	sort.Slice(sbs, func(i, j int) bool { return keyOf(sbs[i]).less(keyOf(sbs[j])) })
	out := api.ListResponse{Sandboxes: []api.SandboxInfo{}}
	for i, sb := range sbs {
		info := sb.info(m.cfg.MaxConcurrentExecPerSandbox)
		if !keep(info) {
			continue
		}
		out.Sandboxes = append(out.Sandboxes, info)
		if req.Limit > 0 && len(out.Sandboxes) == req.Limit && i < len(sbs)-1 {
			out.NextToken = keyOf(sb).token()
			break
		}
	}
	return out, nil
}

// listFilter checks req's filter and returns it as a predicate: S001 for
// an unknown state or a malformed metadata pair or limit.
func listFilter(req api.ListRequest) (func(api.SandboxInfo) bool, error) {
	if req.Limit < 0 || req.Limit > maxListLimit {
		return nil, errdefs.Malformed("limit must be between 0 (all) and %d, got %d", maxListLimit, req.Limit)
	}
	for _, s := range req.State {
		if !slices.Contains(stateNames[:], s) {
			return nil, errdefs.Malformed("state %q is not one of %s", spec.Clip(s, 32), strings.Join(stateNames[:], ", "))
		}
	}
	if err := spec.CheckMetadata("metadata", req.Metadata); err != nil {
		return nil, err
	}
	return func(info api.SandboxInfo) bool {
		if len(req.State) > 0 && !slices.Contains(req.State, info.State) {
			return false
		}
		for k, v := range req.Metadata {
			if got, ok := info.Metadata[k]; !ok || got != v {
				return false
			}
		}
		return true
	}, nil
}

// pageKey orders a listing: by creation, then id.
type pageKey struct {
	created time.Time
	id      string
}

func keyOf(sb *sandbox) pageKey { return pageKey{sb.rec.CreatedAt, sb.rec.ID} }

func (k pageKey) less(o pageKey) bool {
	if !k.created.Equal(o.created) {
		return k.created.Before(o.created)
	}
	return k.id < o.id
}

// token is k as a list's next_token: opaque to callers.
func (k pageKey) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.created.UTC().Format(time.RFC3339Nano) + " " + k.id))
}

// parsePageToken reads a next_token back; "" is the start (nil).
func parsePageToken(tok string) (*pageKey, error) {
	if tok == "" {
		return nil, nil
	}
	bad := errdefs.Malformed("next_token %q is not one a list answered", spec.Clip(tok, 64))
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, bad
	}
	ts, id, ok := strings.Cut(string(raw), " ")
	if !ok {
		return nil, bad
	}
	created, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, bad
	}
	if _, err := spec.ParseID(id); err != nil {
		return nil, bad
	}
	return &pageKey{created, id}, nil
}
