package sandbox

import "github.com/hutch-dev/hutch/internal/sandbox/spec"

// applyTerms writes a create's life terms (spec.CreateTerms) into rec.
func applyTerms(rec *record, t spec.Terms) {
	rec.Name, rec.IdleTimeoutSecs, rec.OnIdle = t.Name, t.IdleSecs, t.OnIdle
	rec.AutoResume, rec.TimeoutSecs, rec.Metadata = t.AutoResume, t.TimeoutSecs, t.Metadata
}
