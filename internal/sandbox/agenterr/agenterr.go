// Package agenterr maps the agent's refusals to hutch's S-codes, for the
// core and its services alike: a filesystem call's FsError (S210–S219),
// a failed upload source or a stalled transfer (S218), a spawn the
// sandbox has no room for (S400). It is pure: what is not one of those
// goes to the caller's failure policy (sandbox.Handle.Fail).
package agenterr

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// fsCodes maps the agent's error kinds to S-codes.
var fsCodes = map[agentv1.FsErrorKind]errdefs.Code{
	agentv1.FsErrorKind_FS_ERROR_KIND_INVALID:        errdefs.CodeFSInvalid,
	agentv1.FsErrorKind_FS_ERROR_KIND_NOT_FOUND:      errdefs.CodeFSNotFound,
	agentv1.FsErrorKind_FS_ERROR_KIND_WRONG_TYPE:     errdefs.CodeFSWrongType,
	agentv1.FsErrorKind_FS_ERROR_KIND_EXISTS:         errdefs.CodeFSExists,
	agentv1.FsErrorKind_FS_ERROR_KIND_NOT_EMPTY:      errdefs.CodeFSNotEmpty,
	agentv1.FsErrorKind_FS_ERROR_KIND_PERMISSION:     errdefs.CodeFSPermission,
	agentv1.FsErrorKind_FS_ERROR_KIND_IO:             errdefs.CodeFSIO,
	agentv1.FsErrorKind_FS_ERROR_KIND_BAD_REGEX:      errdefs.CodeFSBadRegex,
	agentv1.FsErrorKind_FS_ERROR_KIND_STREAM_ABORTED: errdefs.CodeFSStreamAborted,
	agentv1.FsErrorKind_FS_ERROR_KIND_UNSUPPORTED:    errdefs.CodeFSUnsupported,
}

// FsFault is the error of an agent's FsError: its S-code and message, the
// message made safe to show (the agent is not trusted).
func FsFault(fe *agentv1.FsError) *errdefs.Error {
	code, ok := fsCodes[fe.GetKind()]
	if !ok {
		code = errdefs.CodeFSIO
	}
	return errdefs.New(code, "%s", safetext.Line(fe.GetMessage(), 2*safetext.MaxLine))
}

// FsDetail returns the FsError detail of an agent call's error, or nil.
func FsDetail(err error) *agentv1.FsError {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if fe, ok := d.(*agentv1.FsError); ok {
			return fe
		}
	}
	return nil
}

// Fs maps the failure of an agent filesystem call for op: the agent's
// FsError becomes its S-code (S210–S219); an upload whose source failed or
// a stalled transfer is S218; the caller's context error is itself;
// anything else is fail's answer, the failure policy (Handle.Fail: S004
// for a sandbox that ended under the call, or for one ended because its
// agent broke a deadline, a size limit or the protocol).
func Fs(ctx context.Context, op string, err error, fail func() error) error {
	if fe := FsDetail(err); fe != nil {
		return FsFault(fe)
	}
	var se *agentclient.SourceError
	switch {
	case errors.As(err, &se):
		return errdefs.New(errdefs.CodeFSStreamAborted, "%s aborted: %v; nothing was written", op, se).
			WithFix(nil, "send the whole body again")
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, agentclient.ErrStalled):
		return errdefs.New(errdefs.CodeFSStreamAborted, "%s aborted: %v", op, err)
	}
	return fail()
}

// SpawnRefused turns the agent's refusal to start a process for want of
// resources into S400, or returns nil for any other error. Inside the
// sandbox id, fork or clone failed with EAGAIN or ENOMEM: its task limit
// (RLIMIT_NPROC, derived from pids_limit) or its memory is used up, by a
// fork bomb say. The agent answered, so the sandbox is sound and stays up;
// the caller may retry once processes have ended.
func SpawnRefused(id string, err error) error {
	if status.Code(err) != codes.ResourceExhausted {
		return nil
	}
	return errdefs.New(errdefs.CodeCapacity, "sandbox %s cannot start another process: %s (its process or memory limit is used up)", id, status.Convert(err).Message()).
		WithFix(nil, "wait for processes in the sandbox to end, kill some, or stop the sandbox")
}
