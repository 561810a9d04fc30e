// Package api holds the request and response payloads of the sandbox::*
// functions. Field names are the seed contract's: clients written against
// the seeds work unchanged. Every transport (REST, engine WebSocket, CLI,
// Go client) uses these types; nothing else defines a payload.
package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Env is an environment: a list of "KEY=VALUE" strings. In JSON it accepts
// both the list form ["K=V", ...] and the object form {"K": "V"}; an object
// is turned into a list sorted by key.
type Env []string

// UnmarshalJSON accepts a list of strings or an object of strings.
func (e *Env) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("env object values must be strings: %w", err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(Env, 0, len(keys))
		for _, k := range keys {
			out = append(out, k+"="+m[k])
		}
		*e = out
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("env must be a list of \"KEY=VALUE\" strings or an object of strings")
	}
	*e = l
	return nil
}

// CreateRequest is the payload of sandbox::create.
type CreateRequest struct {
	Image           string `json:"image,omitempty"`
	CPUs            uint32 `json:"cpus,omitempty"`
	MemoryMB        uint32 `json:"memory_mb,omitempty"`
	Name            string `json:"name,omitempty"`
	Network         bool   `json:"network,omitempty"`
	IdleTimeoutSecs uint64 `json:"idle_timeout_secs,omitempty"`
	Env             Env    `json:"env,omitempty"`

	// hutch additions (State).
	// TimeoutSecs is an absolute lifetime: the sandbox is stopped this
	// long after its create (or its last sandbox::set_timeout or resume),
	// whatever its activity. 0 is none: only the idle timeout applies.
	TimeoutSecs uint64 `json:"timeout_secs,omitempty"`
	// OnIdle is what the idle reaper does with it, at its idle timeout
	// and at the end of its lifetime (TimeoutSecs): OnIdleStop (the
	// default), OnIdlePause (a freeze) or OnIdlePauseFiles (a pause of
	// depth PauseFiles). A resume starts a new lifetime.
	OnIdle string `json:"on_idle,omitempty"`
	// AutoResume makes a paused sandbox resume itself on the next call
	// that needs it running, instead of answering S005.
	AutoResume bool `json:"auto_resume,omitempty"`
	// Metadata is the caller's own labels, returned by get and list and
	// matched by list's filter.
	Metadata map[string]string `json:"metadata,omitempty"`
	// SnapshotID starts the sandbox from a snapshot (its memory,
	// processes and files) instead of booting it; image, cpus and
	// memory_mb are the snapshot's.
	SnapshotID string `json:"snapshot_id,omitempty"`
	// Template starts the sandbox from a template: its defaults fill the
	// fields this request leaves empty.
	Template string `json:"template,omitempty"`
	// Egress is the egress policy given as "network": {allow_out,
	// deny_out} (which sets Network too); nil is none.
	Egress *EgressPolicy `json:"-"`
	// Volumes are the caller's volumes to mount (volumes.go).
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Runtime is the isolation runtime to start it in ("gvisor",
	// "microvm"); empty is the daemon's default_runtime. A hutch addition.
	Runtime string `json:"runtime,omitempty"`
	// Preview are its preview terms (issue 37); nil is the defaults.
	Preview *PreviewOptions `json:"preview,omitempty"`
}

// createRequestPlain is CreateRequest without its JSON methods.
type createRequestPlain CreateRequest

// UnmarshalJSON reads "network" as a boolean or an egress policy.
func (r *CreateRequest) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	network := fields["network"]
	delete(fields, "network")
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields() // as the function table decodes every payload
	if err := dec.Decode((*createRequestPlain)(r)); err != nil {
		return err
	}
	r.Network, r.Egress, err = unmarshalNetwork(network)
	return err
}

// MarshalJSON writes "network" as the egress policy when there is one.
func (r CreateRequest) MarshalJSON() ([]byte, error) {
	aux := struct {
		createRequestPlain
		Network any `json:"network,omitempty"`
	}{createRequestPlain: createRequestPlain(r)}
	switch {
	case !r.Egress.Empty():
		aux.Network = r.Egress
	case r.Network:
		aux.Network = true
	}
	return json.Marshal(aux)
}

// What the idle reaper does with a sandbox (CreateRequest.OnIdle).
const (
	OnIdleStop  = "stop"
	OnIdlePause = "pause"
	// OnIdlePauseFiles pauses it keeping only its files (PauseFiles).
	OnIdlePauseFiles = "pause_files"
)

// CreateResponse is the result of sandbox::create.
type CreateResponse struct {
	SandboxID string `json:"sandbox_id"`
	Image     string `json:"image"`
	// UnforwardedPorts are host loopback ports that the create-time env
	// named by URL but that the daemon does not forward to the sandbox
	// (not in forwardable_ports, or the daemon's own); those URLs are left
	// as they were. A hutch extension.
	UnforwardedPorts []uint16 `json:"unforwarded_ports,omitempty"`
	// Runtime is the isolation runtime it runs in. A hutch extension.
	Runtime string `json:"runtime,omitempty"`
}

// ExecRequest is the payload of sandbox::exec.
type ExecRequest struct {
	SandboxID string   `json:"sandbox_id"`
	Cmd       string   `json:"cmd,omitempty"`
	Args      []string `json:"args,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	// Stdin is base64; empty means EOF at once.
	Stdin     string `json:"stdin,omitempty"`
	Env       Env    `json:"env,omitempty"`
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
	// Workdir is an absolute path, or WorkdirHome ("~", "~/sub"); ""
	// is the image's.
	Workdir string `json:"workdir,omitempty"`
}

// ExecResponse is the result of sandbox::exec.
type ExecResponse struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// ExitCode is null when the process was killed by the timeout.
	ExitCode   *int   `json:"exit_code"`
	TimedOut   bool   `json:"timed_out"`
	DurationMs uint64 `json:"duration_ms"`
	Success    bool   `json:"success"`
	// StdoutTruncated and StderrTruncated say the stream passed the output cap.
	StdoutTruncated bool `json:"stdout_truncated"`
	StderrTruncated bool `json:"stderr_truncated"`
	// OOMKilled says the kernel's OOM killer ended the process or one of
	// its descendants (exit_code is then 137 when it was the process). Only
	// a microVM's guest reports it; under gVisor running out of memory
	// ends the whole sandbox, with cause out_of_memory. A hutch addition.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// TimeoutMs is the timeout the exec ran with: the request's, or the
	// daemon's default_exec_timeout_ms. A hutch addition.
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
}

// StopRequest is the payload of sandbox::stop.
type StopRequest struct {
	SandboxID string `json:"sandbox_id"`
	Wait      bool   `json:"wait,omitempty"`
}

// StopResponse is the result of sandbox::stop.
type StopResponse struct {
	SandboxID string `json:"sandbox_id"`
	Stopped   bool   `json:"stopped"`
}

// ListRequest is the payload of sandbox::list. Every field is a hutch
// addition and optional: without them, every sandbox of the caller.
type ListRequest struct {
	// State keeps the sandboxes in one of these states ("running",
	// "paused", "stopped", ...).
	State []string `json:"state,omitempty"`
	// Metadata keeps the sandboxes whose metadata has all these pairs.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Limit is the most entries of one answer; 0 is all of them.
	Limit int `json:"limit,omitempty"`
	// NextToken continues a listing where an earlier answer's NextToken
	// left off.
	NextToken string `json:"next_token,omitempty"`
	// NewestFirst lists the newest sandboxes first (oldest first when
	// unset).
	NewestFirst bool `json:"newest_first,omitempty"`
	// CreatedAfter and CreatedBefore keep the sandboxes created after,
	// and before, these instants (RFC 3339).
	CreatedAfter  string `json:"created_after,omitempty"`
	CreatedBefore string `json:"created_before,omitempty"`
}

// ListResponse is the result of sandbox::list.
type ListResponse struct {
	Sandboxes []SandboxInfo `json:"sandboxes"`
	// NextToken is set when Limit cut the listing short: pass it back for
	// the next page.
	NextToken string `json:"next_token,omitempty"`
}

// GetRequest is the payload of sandbox::get, hutch's one-entry list.
type GetRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// SandboxInfo is one entry of sandbox::list.
type SandboxInfo struct {
	SandboxID      string  `json:"sandbox_id"`
	Name           *string `json:"name"`
	Image          string  `json:"image"`
	AgeSecs        uint64  `json:"age_secs"`
	ExecInProgress bool    `json:"exec_in_progress"`
	ExecInFlight   int     `json:"exec_in_flight"`
	ExecSlotsFree  int     `json:"exec_slots_free"`
	Stopped        bool    `json:"stopped"`

	// hutch additions, beyond the seed's fields.
	StopReason string `json:"stop_reason,omitempty"`
	// StopCause is StopReason as a fixed word: request, idle, lifetime,
	// out_of_memory, pids_limit, agent_failure, exited, shutdown or
	// daemon_restart.
	StopCause       string `json:"stop_cause,omitempty"`
	CPUs            uint32 `json:"cpus"`
	MemoryMB        uint32 `json:"memory_mb"`
	Network         bool   `json:"network"`
	IdleTimeoutSecs uint64 `json:"idle_timeout_secs"`
	CreatedAt       string `json:"created_at"`
	// Egress is its egress policy, Networks the sandbox networks it is
	// on (network: true only).
	Egress   *EgressPolicy `json:"egress,omitempty"`
	Networks []string      `json:"networks,omitempty"`
	// Volumes are the volumes it mounts.
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Runtime is the isolation runtime it runs in.
	Runtime string `json:"runtime,omitempty"`
	// State is where the sandbox is in its life: running, pausing,
	// paused, resuming, stopping or stopped.
	State string `json:"state"`
	// PausedAt is when it was paused (RFC 3339), and PauseDepth how
	// (freeze or hibernate), while it is paused.
	PausedAt   string `json:"paused_at,omitempty"`
	PauseDepth string `json:"pause_depth,omitempty"`
	// TimeoutSecs and ExpiresAt are its absolute lifetime and when that
	// ends (RFC 3339), when it has one.
	TimeoutSecs uint64            `json:"timeout_secs,omitempty"`
	ExpiresAt   string            `json:"expires_at,omitempty"`
	OnIdle      string            `json:"on_idle"`
	AutoResume  bool              `json:"auto_resume"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// issue 37: Preview are its preview terms (CreateRequest.Preview);
	// nil is the defaults.
	Preview *PreviewOptions `json:"preview,omitempty"`
	// issue 36: Node is the cluster node holding it (cluster mode only).
	Node string `json:"node,omitempty"`
}

// ImageStatusRequest asks for the cache state of one catalog image.
type ImageStatusRequest struct {
	Name string `json:"name"`
}

// ImageStatus is the cache state of one catalog image.
type ImageStatus struct {
	Name string `json:"name"`
	// State is "missing", "building" (preset recipe) or "pulling" (OCI), or "ready".
	State string `json:"state"`
	// ElapsedSecs is how long the current build or pull has run.
	ElapsedSecs float64 `json:"elapsed_secs,omitempty"`
	// Detail is the latest progress line of a build or pull.
	Detail string `json:"detail,omitempty"`
	// SizeBytes is the root filesystem's size when ready.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// ID is the content hash of a ready image.
	ID string `json:"id,omitempty"`
}

// ErrorEnvelope is the JSON form of an error on every transport.
type ErrorEnvelope struct {
	Type      string         `json:"type"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Fix       map[string]any `json:"fix,omitempty"`
	FixNote   string         `json:"fix_note,omitempty"`
	DocsURL   string         `json:"docs_url,omitempty"`
}

// Error makes an envelope usable as a Go error (the client returns it).
func (e *ErrorEnvelope) Error() string { return e.Code + ": " + e.Message }
