package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// agentStatus is a status as the agent sends it: an FsError detail.
func agentStatus(kind agentv1.FsErrorKind, msg string) error {
	st, err := status.New(codes.Unknown, msg).WithDetails(&agentv1.FsError{Kind: kind, Path: "/p", Message: msg})
	if err != nil {
		panic(err)
	}
	return fmt.Errorf("fs ls: %w", st.Err())
}

func TestFsErrorMapping(t *testing.T) {
	m := &Manager{log: slog.New(slog.DiscardHandler)}
	stopped := &sandbox{rec: record{ID: "id"}, destroyed: make(chan struct{}), state: Stopped, end: runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory"}}
	close(stopped.destroyed)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		code      errdefs.Code
		retryable bool
		msg       string
	}{
		{name: "invalid", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_INVALID, "ls p: bad"), code: errdefs.CodeFSInvalid, msg: "ls p: bad"},
		{name: "not found", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_NOT_FOUND, "x"), code: errdefs.CodeFSNotFound},
		{name: "wrong type", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_WRONG_TYPE, "x"), code: errdefs.CodeFSWrongType},
		{name: "exists", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_EXISTS, "x"), code: errdefs.CodeFSExists},
		{name: "not empty", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_NOT_EMPTY, "x"), code: errdefs.CodeFSNotEmpty},
		{name: "permission", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_PERMISSION, "x"), code: errdefs.CodeFSPermission},
		{name: "io", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_IO, "x"), code: errdefs.CodeFSIO},
		{name: "bad regex", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_BAD_REGEX, "x"), code: errdefs.CodeFSBadRegex},
		{name: "aborted", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_STREAM_ABORTED, "x"), code: errdefs.CodeFSStreamAborted, retryable: true},
		{name: "unsupported", err: agentStatus(agentv1.FsErrorKind_FS_ERROR_KIND_UNSUPPORTED, "x"), code: errdefs.CodeFSUnsupported},
		{name: "unknown kind", err: agentStatus(agentv1.FsErrorKind(99), "x"), code: errdefs.CodeFSIO},
		{name: "source failed", err: &agentclient.SourceError{Err: io.ErrUnexpectedEOF}, code: errdefs.CodeFSStreamAborted, retryable: true},
		{name: "stalled", err: fmt.Errorf("fs upload: %w", agentclient.ErrStalled), code: errdefs.CodeFSStreamAborted, retryable: true},
		{name: "sandbox ended", err: agentclient.ErrClosed, code: errdefs.CodeStopped, msg: "sandbox id stopped during op: out of memory"},
		{name: "agent nonsense", err: errors.New("garbage"), code: errdefs.CodeStopped, msg: "sandbox id stopped during op: out of memory"},
		{name: "caller gone", ctx: cancelled, err: status.Error(codes.Canceled, "x"), code: errdefs.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			err := handle{m: m, sb: stopped}.FsFail(ctx, "op", tc.err)
			if tc.ctx != nil {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want the context's error", err)
				}
				return
			}
			e := errdefs.As(err)
			if e.Code != tc.code || e.Code.Retryable() != tc.retryable || (tc.msg != "" && e.Message != tc.msg) {
				t.Fatalf("got %s %q (retryable %v), want %s %q (retryable %v)", e.Code, e.Message, e.Code.Retryable(), tc.code, tc.msg, tc.retryable)
			}
		})
	}
}
