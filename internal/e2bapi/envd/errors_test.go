package envd

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestConnectCodes(t *testing.T) {
	for _, c := range []struct {
		err    error
		want   connect.Code
		status int
	}{
		{errdefs.New(errdefs.CodeNotFound, "no sandbox"), connect.CodeUnavailable, http.StatusBadGateway},
		{errdefs.New(errdefs.CodeStopped, "stopped"), connect.CodeUnavailable, http.StatusBadGateway},
		{errdefs.New(errdefs.CodePaused, "paused"), connect.CodeUnavailable, http.StatusBadGateway},
		{errdefs.New(errdefs.CodeFSNotFound, "no file"), connect.CodeNotFound, http.StatusNotFound},
		{errdefs.New(errdefs.CodeProcessNotFound, "no process"), connect.CodeNotFound, http.StatusNotFound},
		{errdefs.New(errdefs.CodeProcessExited, "exited"), connect.CodeNotFound, http.StatusNotFound},
		{errdefs.New(errdefs.CodeFSExists, "exists"), connect.CodeAlreadyExists, http.StatusConflict},
		{errdefs.New(errdefs.CodeFSWrongType, "a directory"), connect.CodeInvalidArgument, http.StatusBadRequest},
		{errdefs.New(errdefs.CodeFSInvalid, "bad path"), connect.CodeInvalidArgument, http.StatusBadRequest},
		{errdefs.New(errdefs.CodeFSPermission, "denied"), connect.CodePermissionDenied, http.StatusForbidden},
		{errdefs.New(errdefs.CodeProcessLimit, "too many"), connect.CodeResourceExhausted, http.StatusTooManyRequests},
		{errdefs.New(errdefs.CodeFSNotEmpty, "not empty"), connect.CodeFailedPrecondition, http.StatusBadRequest},
		{fmt.Errorf("wrapped: %w", errdefs.New(errdefs.CodeFSNotFound, "no file")), connect.CodeNotFound, http.StatusNotFound},
		{fmt.Errorf("plain"), connect.CodeInternal, http.StatusInternalServerError},
		{context.Canceled, connect.CodeCanceled, http.StatusRequestTimeout},
		{context.DeadlineExceeded, connect.CodeDeadlineExceeded, http.StatusRequestTimeout},
		{invalid("own"), connect.CodeInvalidArgument, http.StatusBadRequest},
	} {
		got := connect.CodeOf(connectError(c.err))
		if got != c.want || httpStatus(got) != c.status {
			t.Errorf("%v: %v (%d), want %v (%d)", c.err, got, httpStatus(got), c.want, c.status)
		}
	}
}
