package functions

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Params are request fields a transport takes from outside the payload (a
// URL's path and query); the zero value sets nothing. Each set field is set
// on the decoded request, whose type must have it (api.SandboxScoped,
// api.ImageScoped, api.Waiter); a payload that holds another value is S001.
type Params struct {
	SandboxID string
	Name      string
	Wait      *bool
	// Pid is a process of the sandbox (0: none given).
	Pid int
	// SnapshotID is a snapshot (api.SnapshotScoped).
	SnapshotID string
	// Body is the request's content as a stream of bytes that the
	// transport carries beside the payload (api.BodyTaker:
	// sandbox::fs::write); a function that takes none refuses it (S001).
	Body io.Reader
	// StreamBody says the transport takes a result's bytes as a stream
	// (api.BodyGiver: sandbox::fs::read): the result is then a *Content,
	// whose stream the caller must close. Elsewhere it is ignored.
	StreamBody bool
}

// apply sets p's fields on req, decoded from payload.
func (p Params) apply(req any, payload json.RawMessage) error {
	if p.SandboxID != "" {
		f, ok := req.(api.SandboxScoped)
		if !ok {
			return noField(req, "sandbox_id")
		}
		if err := setParam(f.SandboxIDField(), p.SandboxID, "sandbox_id", payload); err != nil {
			return err
		}
	}
	if p.Name != "" {
		f, ok := req.(api.ImageScoped)
		if !ok {
			return noField(req, "name")
		}
		if err := setParam(f.NameField(), p.Name, "name", payload); err != nil {
			return err
		}
	}
	if p.SnapshotID != "" {
		f, ok := req.(api.SnapshotScoped)
		if !ok {
			return noField(req, "snapshot_id")
		}
		if err := setParam(f.SnapshotIDField(), p.SnapshotID, "snapshot_id", payload); err != nil {
			return err
		}
	}
	if p.Pid != 0 {
		f, ok := req.(api.PidScoped)
		if !ok {
			return noField(req, "pid")
		}
		if err := setParam(f.PidField(), p.Pid, "pid", payload); err != nil {
			return err
		}
	}
	if p.Body != nil {
		f, ok := req.(api.BodyTaker)
		if !ok {
			return errdefs.Malformed("this function takes no content stream")
		}
		*f.BodyField() = p.Body
	}
	if f, ok := req.(api.BodyGiver); ok {
		*f.StreamBodyField() = p.StreamBody
	}
	if p.Wait != nil {
		f, ok := req.(api.Waiter)
		if !ok {
			return noField(req, "wait")
		}
		if err := setParam(f.WaitField(), *p.Wait, "wait", payload); err != nil {
			return err
		}
	}
	return nil
}

// setParam sets *field to v. A payload value other than v is S001; so is
// the zero value given explicitly ("sandbox_id": "", "wait": false).
func setParam[T comparable](field *T, v T, key string, payload json.RawMessage) error {
	var zero T
	if *field != v && (*field != zero || hasKey(payload, key)) {
		return Conflict(key, *field, v)
	}
	*field = v
	return nil
}

// Conflict is the S001 of a payload field that disagrees with the URL.
func Conflict(key string, inBody, inURL any) error {
	b, _ := json.Marshal(inBody)
	u, _ := json.Marshal(inURL)
	return errdefs.Malformed("%s in the body (%s) does not match the URL (%s)", key, b, u)
}

func noField(req any, key string) error {
	return errdefs.New(errdefs.CodeInternal, "a %T has no %s field", req, key)
}

// hasKey reports whether the JSON object payload has the top-level key.
// Most payloads do not mention it: a byte search answers without parsing.
func hasKey(payload json.RawMessage, key string) bool {
	quoted := []byte(`"` + key + `"`)
	if !bytes.Contains(payload, quoted) {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		return false
	}
	_, ok := obj[key]
	return ok
}
