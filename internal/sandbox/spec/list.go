package spec

import (
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// maxListLimit bounds a list's limit.
const maxListLimit = 1000

// ListFilter checks req's filter and returns it as a predicate: S001 for
// a state not among states or a malformed metadata pair or limit.
func ListFilter(req api.ListRequest, states []string) (func(api.SandboxInfo) bool, error) {
	if req.Limit < 0 || req.Limit > maxListLimit {
		return nil, errdefs.Malformed("limit must be between 0 (all) and %d, got %d", maxListLimit, req.Limit)
	}
	for _, s := range req.State {
		if !slices.Contains(states, s) {
			return nil, errdefs.Malformed("state %q is not one of %s", Clip(s, 32), strings.Join(states, ", "))
		}
	}
	if err := CheckMetadata("metadata", req.Metadata); err != nil {
		return nil, err
	}
	after, err := instant("created_after", req.CreatedAfter)
	if err != nil {
		return nil, err
	}
	before, err := instant("created_before", req.CreatedBefore)
	if err != nil {
		return nil, err
	}
	return func(info api.SandboxInfo) bool {
		if len(req.State) > 0 && !slices.Contains(req.State, info.State) {
			return false
		}
		if !after.IsZero() || !before.IsZero() {
			created, err := time.Parse(time.RFC3339Nano, info.CreatedAt)
			if err != nil || (!after.IsZero() && !created.After(after)) || (!before.IsZero() && !created.Before(before)) {
				return false
			}
		}
		for k, v := range req.Metadata {
			if got, ok := info.Metadata[k]; !ok || got != v {
				return false
			}
		}
		return true
	}, nil
}

// instant reads an RFC 3339 filter; "" is none (the zero time).
func instant(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, errdefs.Malformed("%s %q is not an RFC 3339 time", field, Clip(v, 64))
	}
	return t, nil
}

// PageKey orders a listing: by creation, then id.
type PageKey struct {
	Created time.Time
	ID      string
}

// Less reports whether k comes before o.
func (k PageKey) Less(o PageKey) bool {
	if !k.Created.Equal(o.Created) {
		return k.Created.Before(o.Created)
	}
	return k.ID < o.ID
}

// Precedes reports whether k comes before o in a listing, newest first
// or oldest first.
func (k PageKey) Precedes(o PageKey, newestFirst bool) bool {
	if newestFirst {
		return o.Less(k)
	}
	return k.Less(o)
}

// Token is k as a list's next_token: opaque to callers.
func (k PageKey) Token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.Created.UTC().Format(time.RFC3339Nano) + " " + k.ID))
}

// ParsePageToken reads a next_token back; "" is the start (nil).
func ParsePageToken(tok string) (*PageKey, error) {
	if tok == "" {
		return nil, nil
	}
	bad := errdefs.Malformed("next_token %q is not one a list answered", Clip(tok, 64))
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
	if _, err := ParseID(id); err != nil {
		return nil, bad
	}
	return &PageKey{created, id}, nil
}
