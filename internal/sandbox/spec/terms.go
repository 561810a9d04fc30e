package spec

import (
	"regexp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Bounds on metadata: enough for labels, too little to store data in.
const (
	maxMetadataPairs      = 64
	maxMetadataKeyBytes   = 64
	maxMetadataValueBytes = 512
)

// metadataKey is what a metadata key may be: a label, safe in a query
// string, a log line and a terminal.
var metadataKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)

// IdleTimeout resolves a create's idle_timeout_secs: 0 takes defaultIdle;
// more than config.MaxIdleTimeoutSecs is S001.
func IdleTimeout(secs, defaultIdle uint64) (uint64, error) {
	if secs == 0 {
		return defaultIdle, nil
	}
	if secs > config.MaxIdleTimeoutSecs {
		return 0, errdefs.Malformed("idle_timeout_secs must be between 1 and %d (7 days), got %d", config.MaxIdleTimeoutSecs, secs).
			WithFix(map[string]any{"idle_timeout_secs": config.MaxIdleTimeoutSecs}, "keep the sandbox busy, or create a new one later")
	}
	return secs, nil
}

// CheckLifetime checks a timeout_secs: at most config.MaxLifetimeSecs,
// and 0 (no lifetime) only where optional says it may be.
func CheckLifetime(secs uint64, optional bool) error {
	if secs == 0 && optional {
		return nil
	}
	if secs == 0 || secs > config.MaxLifetimeSecs {
		return errdefs.Malformed("timeout_secs must be between 1 and %d (30 days), got %d", config.MaxLifetimeSecs, secs).
			WithFix(map[string]any{"timeout_secs": config.MaxLifetimeSecs}, "extend it later with sandbox::set_timeout")
	}
	return nil
}

// CheckMetadata checks a metadata map (field names it in messages): at
// most maxMetadataPairs pairs, keys that match metadataKey, values that
// safetext finds safe, both within their bounds.
func CheckMetadata(field string, md map[string]string) error {
	if len(md) > maxMetadataPairs {
		return errdefs.Malformed("%s has %d keys; at most %d", field, len(md), maxMetadataPairs)
	}
	for k, v := range md {
		if len(k) > maxMetadataKeyBytes || !metadataKey.MatchString(k) {
			return errdefs.Malformed("%s key %q must be 1 to %d letters, digits and _ . : / - (starting with a letter or digit)", field, Clip(k, 64), maxMetadataKeyBytes)
		}
		if len(v) > maxMetadataValueBytes {
			return errdefs.Malformed("%s[%s] is longer than %d bytes", field, k, maxMetadataValueBytes)
		}
		if !safetext.Safe(v) {
			return errdefs.Malformed("%s[%s] must be UTF-8 text without control or format characters", field, k)
		}
	}
	return nil
}

// Terms are the parts of a create that rule a sandbox's life rather than
// its resources: its name, idle timeout and what idleness does, its
// absolute lifetime, auto-resume and metadata. A create checks them once
// and both of its paths (a boot, a warm pool claim) write them into the
// sandbox's record.
type Terms struct {
	Name        string
	IdleSecs    uint64
	OnIdle      string
	AutoResume  bool
	TimeoutSecs uint64
	Metadata    map[string]string
}

// CreateTerms checks the life terms of a create, whose idle timeout is
// defaultIdleSecs when it names none: S001 names the field.
func CreateTerms(req api.CreateRequest, defaultIdleSecs uint64) (Terms, error) {
	if len(req.Name) > 128 {
		return Terms{}, errdefs.Malformed("name is longer than 128 bytes")
	}
	idle, err := IdleTimeout(req.IdleTimeoutSecs, defaultIdleSecs)
	if err != nil {
		return Terms{}, err
	}
	switch req.OnIdle {
	case "", api.OnIdleStop, api.OnIdlePause, api.OnIdlePauseFiles:
	default:
		return Terms{}, errdefs.Malformed("on_idle must be %q, %q or %q, got %q", api.OnIdleStop, api.OnIdlePause, api.OnIdlePauseFiles, Clip(req.OnIdle, 32))
	}
	if err := CheckLifetime(req.TimeoutSecs, true); err != nil {
		return Terms{}, err
	}
	if err := CheckMetadata("metadata", req.Metadata); err != nil {
		return Terms{}, err
	}
	onIdle := req.OnIdle
	if onIdle == "" {
		onIdle = api.OnIdleStop
	}
	return Terms{Name: req.Name, IdleSecs: idle, OnIdle: onIdle, AutoResume: req.AutoResume,
		TimeoutSecs: req.TimeoutSecs, Metadata: req.Metadata}, nil
}
