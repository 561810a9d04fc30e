package engineapi

import (
	"bytes"
	"encoding/json"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
)

// Message types of the engine protocol (the "type" field).
const (
	typeInvokeFunction        = "invokefunction"
	typeInvocationResult      = "invocationresult"
	typeWorkerRegistered      = "workerregistered"
	typeReattach              = "reattach"
	typePing                  = "ping"
	typePong                  = "pong"
	typeRegisterFunction      = "registerfunction"
	typeUnregisterFunction    = "unregisterfunction"
	typeRegisterTriggerType   = "registertriggertype"
	typeUnregisterTriggerType = "unregistertriggertype"
	typeRegisterTrigger       = "registertrigger"
	typeUnregisterTrigger     = "unregistertrigger"
	typeTriggerRegistration   = "triggerregistrationresult"
)

// Engine-level error codes (not S-codes: no sandbox function ran).
const (
	codeInvocationFailed   = "invocation_failed"
	codeInvalidMessage     = "invalid_message"
	codeMessageTooLarge    = "message_too_large"
	codeTooManyInvocations = "too_many_invocations"
	codeEnqueueError       = "enqueue_error"
)

// handlerErrorPrefix starts the message of a sandbox error; the envelope
// JSON follows, so callers can parse it (seed 000, "Error handling").
const handlerErrorPrefix = "handler error: "

// inbound is any message a client sends. Only the fields hutch uses are
// decoded; the rest (traceparent, baggage, metadata, schemas) is ignored.
type inbound struct {
	Type string `json:"type"`

	// invokefunction
	InvocationID json.RawMessage `json:"invocation_id"`
	FunctionID   string          `json:"function_id"`
	Data         json.RawMessage `json:"data"`
	Action       *action         `json:"action"`

	// reattach
	PreviousWorkerID string `json:"previous_worker_id"`
	ReattachToken    string `json:"reattach_token"`

	// registerfunction, registertrigger, ...
	ID          string          `json:"id"`
	TriggerType string          `json:"trigger_type"`
	Config      json.RawMessage `json:"config"`

	// invocationresult (a worker's answer to a trigger's event)
	Error *errorBody `json:"error"`
}

// invocation is an invokefunction hutch sends: a trigger's event for a
// worker's function.
type invocation struct {
	Type         string          `json:"type"`
	InvocationID json.RawMessage `json:"invocation_id"`
	FunctionID   string          `json:"function_id"`
	Data         json.RawMessage `json:"data"`
}

// action is how an invocation is routed: "void" (fire-and-forget) or
// "enqueue" (to a named queue, which hutch does not have).
type action struct {
	Type  string `json:"type"`
	Queue string `json:"queue"`
}

func (a *action) isVoid() bool { return a != nil && a.Type == "void" }

// errorBody is the error of a failed invocation.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// invocationResult answers one invocation. InvocationID is the raw value
// the caller sent (null when it sent none).
type invocationResult struct {
	Type         string          `json:"type"`
	InvocationID json.RawMessage `json:"invocation_id"`
	FunctionID   string          `json:"function_id,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *errorBody      `json:"error,omitempty"`
}

// workerRegistered greets a connection (and answers a valid reattach).
type workerRegistered struct {
	Type          string `json:"type"`
	WorkerID      string `json:"worker_id"`
	ReattachToken string `json:"reattach_token"`
}

// triggerRegistrationResult answers a trigger registration: accepted, or
// refused with an error.
type triggerRegistrationResult struct {
	Type        string     `json:"type"`
	ID          string     `json:"id"`
	TriggerType string     `json:"trigger_type"`
	FunctionID  string     `json:"function_id"`
	Error       *errorBody `json:"error,omitempty"`
}

type simpleMessage struct {
	Type string `json:"type"`
}

// nullID is the invocation_id of an answer to a message that had none.
var nullID = json.RawMessage("null")

// engineError is the one mapping from an error of the function table to
// the engine protocol's error body: an unknown function is the engine's
// function_not_found; every other error is invocation_failed with the
// envelope after "handler error: ".
func engineError(err error) *errorBody {
	env := envelope.From(err)
	if env.Code == envelope.CodeFunctionNotFound {
		return &errorBody{Code: env.Code, Message: env.Message}
	}
	b, _ := api.Marshal(env) // an envelope of strings and a fix of JSON values always encodes
	return &errorBody{Code: codeInvocationFailed, Message: handlerErrorPrefix + string(b)}
}

// peekHeader reads the leading top-level string fields of a JSON object
// that may be cut off (a message over the size limit), so that an answer
// can still reach its caller. It stops at the first field that is not a
// string, or at the cut.
func peekHeader(prefix []byte) (invocationID json.RawMessage, functionID string) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ""
	}
	for {
		key, err := dec.Token()
		if err != nil {
			return invocationID, functionID
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return invocationID, functionID
		}
		if len(raw) == 0 || raw[0] != '"' {
			continue
		}
		switch key {
		case "invocation_id":
			invocationID = raw
		case "function_id":
			_ = json.Unmarshal(raw, &functionID)
		}
	}
}
