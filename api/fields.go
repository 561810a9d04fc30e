package api

import "io"

// Request fields a transport may take from outside a payload (a URL's
// path or query). A request type that has such a field says so by handing
// it out through one of these interfaces; internal/functions sets it on the
// decoded request (functions.Params), so no transport rewrites payloads.

// SandboxScoped is a request that names its sandbox.
type SandboxScoped interface{ SandboxIDField() *string }

// ImageScoped is a request that names a catalog image.
type ImageScoped interface{ NameField() *string }

// SnapshotScoped is a request that names a snapshot.
type SnapshotScoped interface{ SnapshotIDField() *string }

// Waiter is a request that can wait for its work to finish.
type Waiter interface{ WaitField() *bool }

// BodyTaker is a request whose content may come as a stream of bytes.
type BodyTaker interface{ BodyField() *io.Reader }

// BodyGiver is a request whose result may give its bytes as a stream.
type BodyGiver interface{ StreamBodyField() *bool }

func (r *FsWriteRequest) BodyField() *io.Reader { return &r.Body }
func (r *FsReadRequest) StreamBodyField() *bool { return &r.StreamBody }

func (r *ExecRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *StopRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *StopRequest) WaitField() *bool              { return &r.Wait }
func (r *GetRequest) SandboxIDField() *string        { return &r.SandboxID }
func (r *MetricsRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *FsLsRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *FsStatRequest) SandboxIDField() *string     { return &r.SandboxID }
func (r *FsMkdirRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *FsWriteRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *FsReadRequest) SandboxIDField() *string     { return &r.SandboxID }
func (r *FsRmRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *FsMvRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *FsChmodRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *FsGrepRequest) SandboxIDField() *string     { return &r.SandboxID }
func (r *FsSedRequest) SandboxIDField() *string      { return &r.SandboxID }
func (r *FsUploadRequest) SandboxIDField() *string   { return &r.SandboxID }
func (r *FsDownloadRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ImageStatusRequest) NameField() *string     { return &r.Name }
func (r *ImagePullRequest) NameField() *string       { return &r.Name }
func (r *ImageRemoveRequest) NameField() *string     { return &r.Name }

// TimedOutAfter reports whether the exec was killed by its timeout, and
// the timeout it ran with. RunResponse has it too.
func (r ExecResponse) TimedOutAfter() (ms uint64, timedOut bool) { return r.TimeoutMs, r.TimedOut }
