package procsvc

// The agent's background processes as the service and the interpreter
// (interpsvc, which runs its kernels through this service) read them: the
// S-codes of its refusals and the shapes of its output.

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
)

// ErrCannotStart is the cause of a start the agent refused: the command
// is not found or not executable.
var ErrCannotStart = errors.New("cannot start the command")

// UnknownProcess is S231 for process pid of sandbox id.
func UnknownProcess(id string, pid int) error {
	return errdefs.New(errdefs.CodeProcessNotFound, "sandbox %s has no process %d that hutch started", id, pid).
		WithFix(nil, "sandbox::process::list shows the sandbox's processes")
}

// Fail maps the failure of an agent call for op on process pid of h's
// sandbox: the agent's refusal becomes its S-code (its message is the
// sandbox's and goes in clipped text): a gone process, one that exited,
// a refused spawn; any other failure goes through h.Fail, the failure
// policy.
func Fail(ctx context.Context, h sandbox.Handle, op string, pid int, err error) error {
	id := h.ID()
	if refused := agenterr.SpawnRefused(id, err); refused != nil {
		return refused
	}
	st, ok := status.FromError(unwrapStatus(err))
	if ok {
		msg := safetext.Line(st.Message(), safetext.MaxLine)
		switch st.Code() {
		case codes.NotFound:
			return UnknownProcess(id, pid)
		case codes.FailedPrecondition:
			switch {
			case strings.Contains(msg, "has exited"):
				return errdefs.New(errdefs.CodeProcessExited, "%s process %d of sandbox %s: it has exited", op, pid, id)
			case strings.Contains(msg, "no open stdin"), strings.Contains(msg, "reads a pty"):
				return errdefs.New(errdefs.CodeNoStdin, "%s process %d of sandbox %s: %s", op, pid, id, msg).
					WithFix(nil, "start the process with stdin: true to write to it")
			case strings.Contains(msg, "has no pty"):
				return errdefs.New(errdefs.CodeNotPty, "%s process %d of sandbox %s: it has no terminal", op, pid, id)
			}
		case codes.InvalidArgument, codes.OutOfRange:
			return errdefs.New(errdefs.CodeMalformed, "%s process %d of sandbox %s: %s", op, pid, id, msg)
		case codes.Canceled:
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return h.Fail(ctx, op, err)
}

// unwrapStatus finds the gRPC status error inside err's chain.
func unwrapStatus(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(interface{ GRPCStatus() *status.Status }); ok {
			return e
		}
	}
	return err
}

// SignalName is signal n's name without "SIG", or its number.
func SignalName(n int32) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return strings.TrimPrefix(name, "SIG")
	}
	return strconv.Itoa(int(n))
}

// StreamIndex is 0 for stdout, 1 for stderr.
func StreamIndex(s agentv1.Stream) int {
	if s == agentv1.Stream_STREAM_STDERR {
		return 1
	}
	return 0
}

// TextOrBase64 is b as text, or in base64 when it is not valid UTF-8.
func TextOrBase64(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// ownedTextOrBase64 is TextOrBase64 of bytes no one writes again (a chunk
// just received from the agent, which only relay holds): the text shares
// their memory instead of copying up to 1 MiB per chunk (issue 46: 5).
func ownedTextOrBase64(b []byte) (string, bool) {
	if len(b) > 0 && utf8.Valid(b) {
		return unsafe.String(unsafe.SliceData(b), len(b)), false
	}
	return TextOrBase64(b)
}
