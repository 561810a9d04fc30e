package sandbox

// The agent's filesystem errors, mapped in one place (fsError, which
// services reach as Handle.FsFail): its FsError becomes an S-code, and its
// failures go to the one failure policy (agentFailure).

import (
	"context"
	"errors"

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

// fsError maps the failure of an agent filesystem call on sb: the agent's
// FsError becomes its S-code (S210–S219); an upload whose source failed or
// a stalled transfer is S218; anything else goes to the one failure policy
// (agentFailure): the caller's context error, S004 for a sandbox that
// ended under the call, or S004 for one ended because its agent broke a
// deadline, a size limit or the protocol.
func (m *Manager) fsError(ctx context.Context, sb *sandbox, op string, err error) error {
	return FsError(ctx, op, err, func() error { return m.agentFailure(ctx, sb, op, err) })
}

// FsError is fsError whose last step, the failure policy, is fail
// (sandboxtest's fake calls its own).
func FsError(ctx context.Context, op string, err error, fail func() error) error {
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
