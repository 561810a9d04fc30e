package spec

import (
	"regexp"

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
