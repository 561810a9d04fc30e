package sandbox

import (
	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// terms are the parts of a create that rule a sandbox's life rather than
// its resources: its name, idle timeout and what idleness does, its
// absolute lifetime, auto-resume and metadata. Create checks them once and
// both of its paths (a boot, a warm pool claim) write them into the record.
type terms struct {
	name        string
	idleSecs    uint64
	onIdle      string
	autoResume  bool
	timeoutSecs uint64
	metadata    map[string]string
}

// createTerms checks the life terms of a create, whose idle timeout is
// defaultIdleSecs when it names none: S001 names the field.
func createTerms(req api.CreateRequest, defaultIdleSecs uint64) (terms, error) {
	if len(req.Name) > 128 {
		return terms{}, errdefs.Malformed("name is longer than 128 bytes")
	}
	idle, err := spec.IdleTimeout(req.IdleTimeoutSecs, defaultIdleSecs)
	if err != nil {
		return terms{}, err
	}
	switch req.OnIdle {
	case "", api.OnIdleStop, api.OnIdlePause:
	default:
		return terms{}, errdefs.Malformed("on_idle must be %q or %q, got %q", api.OnIdleStop, api.OnIdlePause, spec.Clip(req.OnIdle, 32))
	}
	if err := spec.CheckLifetime(req.TimeoutSecs, true); err != nil {
		return terms{}, err
	}
	if err := spec.CheckMetadata("metadata", req.Metadata); err != nil {
		return terms{}, err
	}
	onIdle := req.OnIdle
	if onIdle == "" {
		onIdle = api.OnIdleStop
	}
	return terms{name: req.Name, idleSecs: idle, onIdle: onIdle, autoResume: req.AutoResume,
		timeoutSecs: req.TimeoutSecs, metadata: req.Metadata}, nil
}

// apply writes t into rec.
func (t terms) apply(rec *record) {
	rec.Name, rec.IdleTimeoutSecs, rec.OnIdle = t.name, t.idleSecs, t.onIdle
	rec.AutoResume, rec.TimeoutSecs, rec.Metadata = t.autoResume, t.timeoutSecs, t.metadata
}
