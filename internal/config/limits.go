package config

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hutch-dev/hutch/internal/auth"
)

// Upper bounds of the lifecycle limits. They keep every duration far from
// overflowing and reject values that can only be typos; the manager checks
// requests against the same bounds.
const (
	// MaxIdleTimeoutSecs bounds default_idle_timeout_secs and a create's
	// idle_timeout_secs: 7 days.
	MaxIdleTimeoutSecs = 7 * 24 * 3600
	// MaxExecTimeoutMs bounds max_exec_timeout_ms: 24 hours.
	MaxExecTimeoutMs = 24 * 3600 * 1000
	// MaxStoppedRetentionSecs bounds stopped_retention_secs: 30 days.
	MaxStoppedRetentionSecs = 30 * 24 * 3600
	// MaxPausedRetentionSecs bounds paused_retention_secs: 30 days.
	MaxPausedRetentionSecs = 30 * 24 * 3600
	// MaxLifetimeSecs bounds a create's timeout_secs (its absolute
	// lifetime) and sandbox::set_timeout: 30 days.
	MaxLifetimeSecs = 30 * 24 * 3600
	// MinPidsLimit is the smallest pids_limit a gVisor sandbox boots with:
	// its Sentry and gofer alone are about 25 host tasks.
	MinPidsLimit = 64
	// MaxPidsLimit is the kernel's PID_MAX_LIMIT on 64-bit hosts.
	MaxPidsLimit = 1 << 22
	// MinWritableLayerMB and MaxWritableLayerMB bound writable_layer_mb.
	MinWritableLayerMB = 16
	MaxWritableLayerMB = 1 << 20
)

// validateLifecycle checks the keys of limits, the idle reaper and owners.
func (c *Config) validateLifecycle() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.DefaultIdleTimeoutSecs > MaxIdleTimeoutSecs {
		bad("default_idle_timeout_secs must be at most %d (7 days), got %d", MaxIdleTimeoutSecs, c.DefaultIdleTimeoutSecs)
	}
	if c.MaxExecTimeoutMs > MaxExecTimeoutMs {
		bad("max_exec_timeout_ms must be at most %d (24 hours), got %d", MaxExecTimeoutMs, c.MaxExecTimeoutMs)
	}
	if c.StoppedRetentionSecs > MaxStoppedRetentionSecs {
		bad("stopped_retention_secs must be at most %d (30 days), got %d", MaxStoppedRetentionSecs, c.StoppedRetentionSecs)
	}
	if c.PausedRetentionSecs < 1 || c.PausedRetentionSecs > MaxPausedRetentionSecs {
		bad("paused_retention_secs must be between 1 and %d (30 days), got %d", MaxPausedRetentionSecs, c.PausedRetentionSecs)
	}
	if c.SnapshotStorageMB < 1 || c.SnapshotStorageMB > 1<<30 {
		bad("snapshot_storage_mb must be between 1 and %d, got %d", 1<<30, c.SnapshotStorageMB)
	}
	if c.EventsMaxCount < 100 || c.EventsMaxCount > 10_000_000 {
		bad("events_max_count must be between 100 and 10000000, got %d", c.EventsMaxCount)
	}
	if c.EventsMaxAgeSecs < 60 || c.EventsMaxAgeSecs > 90*24*3600 {
		bad("events_max_age_secs must be between 60 and %d (90 days), got %d", 90*24*3600, c.EventsMaxAgeSecs)
	}
	// An owner's share above the log's own is the log's own.
	if c.EventsMaxMB < 1 || c.EventsMaxMB > 1<<16 {
		bad("events_max_mb must be between 1 and %d, got %d", 1<<16, c.EventsMaxMB)
	}
	if c.EventsMaxMBPerOwner < 1 || c.EventsMaxMBPerOwner > 1<<16 {
		bad("events_max_mb_per_owner must be between 1 and %d, got %d", 1<<16, c.EventsMaxMBPerOwner)
	}
	if c.EventsMaxCountPerOwner < 100 || c.EventsMaxCountPerOwner > 10_000_000 {
		bad("events_max_count_per_owner must be between 100 and 10000000, got %d", c.EventsMaxCountPerOwner)
	}
	if c.JobsMaxRunning < 1 || c.JobsMaxRunning > 1000 {
		bad("jobs_max_running must be between 1 and 1000, got %d", c.JobsMaxRunning)
	}
	if c.JobsMaxRunningPerOwner < 0 || c.JobsMaxRunningPerOwner > max(c.JobsMaxRunning, 1) {
		bad("jobs_max_running_per_owner must be between 0 (one less than jobs_max_running) and jobs_max_running (%d), got %d", c.JobsMaxRunning, c.JobsMaxRunningPerOwner)
	}
	if c.MaxQueuedJobsPerOwner < 1 || c.MaxQueuedJobsPerOwner > 1_000_000 {
		bad("max_queued_jobs_per_owner must be between 1 and 1000000, got %d", c.MaxQueuedJobsPerOwner)
	}
	if c.JobsMaxKept < 100 || c.JobsMaxKept > 1_000_000 {
		bad("jobs_max_kept must be between 100 and 1000000, got %d", c.JobsMaxKept)
	}
	if c.PidsLimit < MinPidsLimit || c.PidsLimit > MaxPidsLimit {
		bad("pids_limit must be between %d and %d, got %d (a sandbox's own runtime needs about 25 host tasks)", MinPidsLimit, MaxPidsLimit, c.PidsLimit)
	}
	if c.WritableLayerMB < MinWritableLayerMB || c.WritableLayerMB > MaxWritableLayerMB {
		bad("writable_layer_mb must be between %d and %d, got %d", MinWritableLayerMB, MaxWritableLayerMB, c.WritableLayerMB)
	}
	if _, err := auth.New(c.APITokens); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// redactTokens returns tokens with every token replaced, for printing.
func redactTokens(tokens map[string]string) map[string]string {
	if tokens == nil {
		return nil
	}
	out := maps.Clone(tokens)
	for o := range out {
		out[o] = "<redacted>"
	}
	return out
}

// typeErrorLine matches one of yaml's type errors after tidyYAMLError:
// "line 3: cannot unmarshal !!int `-1` into uint64".
var typeErrorLine = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) `([^`]*)` into (\\S+)$")

// nameTypeErrors rewrites yaml's type errors, which name only a line and a
// Go type, into ones that name the key (as a dotted path found in root)
// and the kind of value it takes.
func nameTypeErrors(err error, root *yaml.Node) error {
	paths := map[string]string{}
	keyPaths(root, "", paths)
	lines := strings.Split(err.Error(), "; ")
	for i, l := range lines {
		m := typeErrorLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		key := paths[m[1]]
		if key == "" {
			continue
		}
		lines[i] = fmt.Sprintf("line %s: %s must be %s, not %s", m[1], key, kindOf(m[4]), m[3])
	}
	return fmt.Errorf("%s", strings.Join(lines, "; "))
}

// keyPaths records, by line number, the dotted key path of every value
// under n that is not itself a mapping.
func keyPaths(n *yaml.Node, prefix string, out map[string]string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := prefix + k.Value
		if v.Kind == yaml.MappingNode {
			keyPaths(v, path+".", out)
			continue
		}
		if line := fmt.Sprint(v.Line); out[line] == "" {
			out[line] = path
		}
	}
}

// kindOf describes the values a Go type of the config accepts.
func kindOf(goType string) string {
	switch {
	case goType == "uint32":
		return "a whole number from 0 to 4294967295"
	case strings.HasPrefix(goType, "uint"):
		return "a whole number of at least 0"
	case strings.HasPrefix(goType, "int"):
		return "a whole number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"):
		return "a mapping"
	}
	return "a " + goType
}
