package sandbox

import "github.com/hutch-dev/hutch/internal/sandbox/spec"

// The request checks that need no state of the core are package spec's.
// These are the names the core's files (and services written before spec)
// still call them by; new code calls spec directly. Delete each once
// nothing calls it.
var (
	clip            = spec.Clip
	parseID         = spec.ParseID
	commandArgv     = spec.CommandArgv
	decodeStdin     = spec.DecodeStdin
	validateWorkdir = spec.ValidateWorkdir
	// Clip is spec.Clip.
	Clip = spec.Clip
	// ValidateEnv is spec.ValidateEnv.
	ValidateEnv = spec.ValidateEnv
	// MergeEnv is spec.MergeEnv.
	MergeEnv = spec.MergeEnv
)
