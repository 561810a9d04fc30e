package envd

// Errors: hutch's S-coded errors as the Connect codes (and, for /files,
// the HTTP statuses) E2B's SDKs map to their error classes, in one place.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// invalid is an InvalidArgument error of the request's own.
func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

// notFound is a NotFound error of the request's own.
func notFound(format string, args ...any) error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf(format, args...))
}

// connectError turns err (from the table, a context, or already a
// *connect.Error) into a *connect.Error.
func connectError(err error) error {
	var ce *connect.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	e := errdefs.As(err)
	return connect.NewError(codeOf(e.Code), errors.New(e.Error()))
}

// codeOf is the Connect code of an S-code: a sandbox that is gone or
// paused is Unavailable (the SDK's "sandbox probably not running"), an
// existing path AlreadyExists (makeDir answers false), an exited process
// NotFound (as envd forgets it); the rest by kind.
func codeOf(c errdefs.Code) connect.Code {
	switch c {
	case errdefs.CodeNotFound, errdefs.CodeStopped, errdefs.CodePaused, errdefs.CodeShuttingDown:
		return connect.CodeUnavailable
	case errdefs.CodeFSExists:
		return connect.CodeAlreadyExists
	case errdefs.CodeProcessExited:
		return connect.CodeNotFound
	case errdefs.CodeFSWrongType:
		return connect.CodeInvalidArgument
	}
	switch c.Kind() {
	case errdefs.KindInvalid:
		return connect.CodeInvalidArgument
	case errdefs.KindNotFound:
		return connect.CodeNotFound
	case errdefs.KindConflict, errdefs.KindPrecondition:
		return connect.CodeFailedPrecondition
	case errdefs.KindForbidden:
		return connect.CodePermissionDenied
	case errdefs.KindCapacity:
		return connect.CodeResourceExhausted
	case errdefs.KindTimeout:
		return connect.CodeDeadlineExceeded
	case errdefs.KindUnavailable:
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}

// httpStatus is the HTTP status of a Connect code, for /files answers.
func httpStatus(c connect.Code) int {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition:
		return http.StatusBadRequest
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists:
		return http.StatusConflict
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeUnavailable:
		return http.StatusBadGateway
	case connect.CodeDeadlineExceeded, connect.CodeCanceled:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// abortIfGone cuts the connection of a stream whose sandbox stopped or
// paused under it (err is the stream's), as E2B's proxy drops the
// connections of a sandbox that goes: the SDK, seeing the connection
// terminated, asks /health (502 now) and reports the sandbox killed or at
// its end of life, instead of a timeout to be raised.
func abortIfGone(err error) {
	if errdefs.Is(err, errdefs.CodeStopped) || errdefs.Is(err, errdefs.CodePaused) {
		panic(http.ErrAbortHandler)
	}
}

// errorf is fmt.Errorf, for messages of Connect errors.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
