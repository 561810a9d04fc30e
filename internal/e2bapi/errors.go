package e2bapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// statusError is an answer of the transport itself, with its status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func fail(status int, msg string) error { return &statusError{status: status, msg: msg} }

// errorStatus is the one mapping from an error to E2B's status: hutch's
// kinds as its REST API maps them, and a stopped sandbox is gone (404).
// E2B's SDK turns 401, 404, 409, 429 and 503 into its error classes.
func errorStatus(err error) (int, string) {
	var se *statusError
	if errors.As(err, &se) {
		return se.status, se.msg
	}
	if errdefs.Is(err, errdefs.CodeStopped) {
		return http.StatusNotFound, envelope.From(err).Message
	}
	env := envelope.From(err)
	return envelope.HTTPStatus(err), env.Code + ": " + env.Message
}

// writeError answers err as E2B's {code, message}.
func writeError(w http.ResponseWriter, err error) {
	status, msg := errorStatus(err)
	writeJSON(w, status, errorBody{Code: status, Message: msg})
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Code: status, Message: "encoding the answer: " + err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
