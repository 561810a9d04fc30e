// Package envelope turns core errors into the JSON error envelope that every
// transport sends, and maps error classes to HTTP statuses. It is the one
// place where S-codes meet transport codes.
package envelope

import (
	"errors"
	"net/http"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// DocsBase is where each code's section of docs/errors.md is published;
// docs_url is DocsBase + "#" + lowercased code.
const DocsBase = "https://github.com/hutch-dev/hutch/blob/main/docs/errors.md"

// CodeFunctionNotFound is the envelope code of a call to a function id the
// table does not have (functions.ErrNotFound). It is not an S-code: the
// engine protocol reports it as an engine-level failure, not as a handler
// error.
const CodeFunctionNotFound = "function_not_found"

// From builds the envelope of err.
func From(err error) api.ErrorEnvelope {
	if errors.Is(err, functions.ErrNotFound) {
		return api.ErrorEnvelope{
			Type:    string(errdefs.ClassValidation),
			Code:    CodeFunctionNotFound,
			Message: err.Error(),
			FixNote: "function ids look like sandbox::exec; docs/errors.md#function_not_found lists them",
			DocsURL: DocsBase + "#" + CodeFunctionNotFound,
		}
	}
	e := errdefs.As(err)
	return api.ErrorEnvelope{
		Type:      string(e.Code.Class()),
		Code:      string(e.Code),
		Message:   e.Error(),
		Retryable: e.Code.Retryable(),
		Fix:       e.Fix,
		FixNote:   e.FixNote,
		DocsURL:   DocsURL(e.Code),
	}
}

// DocsURL is the documentation link of code.
func DocsURL(code errdefs.Code) string {
	return DocsBase + "#" + strings.ToLower(string(code))
}

// HTTPStatus is the HTTP status of err's kind.
func HTTPStatus(err error) int {
	if errors.Is(err, functions.ErrNotFound) {
		return http.StatusNotFound
	}
	return kindStatus[errdefs.As(err).Code.Kind()]
}

// kindStatus is the HTTP status of each error kind.
var kindStatus = map[errdefs.Kind]int{
	errdefs.KindInternal:     http.StatusInternalServerError,
	errdefs.KindInvalid:      http.StatusBadRequest,
	errdefs.KindNotFound:     http.StatusNotFound,
	errdefs.KindConflict:     http.StatusConflict,
	errdefs.KindForbidden:    http.StatusForbidden,
	errdefs.KindPrecondition: http.StatusUnprocessableEntity,
	errdefs.KindCapacity:     http.StatusTooManyRequests,
	errdefs.KindTimeout:      http.StatusGatewayTimeout,
	errdefs.KindUnavailable:  http.StatusServiceUnavailable,
}
