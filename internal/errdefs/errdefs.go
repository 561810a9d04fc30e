// Package errdefs defines the fixed set of error classes that hutch's core
// packages return, each carrying an S-code from the sandbox function contract.
//
// Core packages build errors with the constructors here (Invalid, NotFound,
// ...) and wrap them with %w; only transports turn them into HTTP statuses,
// engine envelopes or CLI exit codes, each in one function of its own.
package errdefs

import (
	"errors"
	"fmt"
)

// Class is the category of an error; it decides transport mappings.
type Class string

// The error classes. The strings are the envelope's "type" field.
const (
	ClassValidation Class = "validation"
	ClassConfig     Class = "config"
	ClassInternal   Class = "internal"
	ClassTransient  Class = "transient"
	ClassExecution  Class = "execution"
	ClassPlatform   Class = "platform"
	ClassFilesystem Class = "filesystem"
)

// Code is an S-code from the contract's error table.
type Code string

// The S-codes of the contract.
const (
	CodeMalformed       Code = "S001" // malformed request
	CodeNotFound        Code = "S002" // no live sandbox with that id
	CodeExecBusy        Code = "S003" // exec concurrency cap reached
	CodeStopped         Code = "S004" // sandbox already stopped
	CodeImageNotAllowed Code = "S100" // image not in catalog or allowlist
	CodeImageMissing    Code = "S101" // rootfs missing and auto_install false
	CodeImagePull       Code = "S102" // pull/unpack/build failed
	CodeOperatorOnly    Code = "S110" // an operator action asked by another owner (hutch's own)
	CodeExecTimeout     Code = "S200" // exec timed out
	CodeFSInvalid       Code = "S210"
	CodeFSNotFound      Code = "S211"
	CodeFSWrongType     Code = "S212"
	CodeFSExists        Code = "S213"
	CodeFSNotEmpty      Code = "S214"
	CodeFSPermission    Code = "S215"
	CodeFSIO            Code = "S216"
	CodeFSBadRegex      Code = "S217"
	CodeFSStreamAborted Code = "S218"
	CodeFSUnsupported   Code = "S219"
	CodeBootFailed      Code = "S300" // runtime could not start the sandbox
	CodeCapacity        Code = "S400" // capacity or per-image cap exceeded
	CodeInternal        Code = "S500" // a bug or host failure outside the contract
)

// codeInfo is the fixed class and retryability of each code.
var codeInfo = map[Code]struct {
	class     Class
	retryable bool
}{
	CodeMalformed:       {ClassValidation, false},
	CodeNotFound:        {ClassValidation, false},
	CodeExecBusy:        {ClassValidation, false},
	CodeStopped:         {ClassValidation, false},
	CodeImageNotAllowed: {ClassConfig, false},
	CodeImageMissing:    {ClassInternal, false},
	CodeImagePull:       {ClassTransient, true},
	CodeOperatorOnly:    {ClassConfig, false},
	CodeExecTimeout:     {ClassExecution, false},
	CodeFSInvalid:       {ClassFilesystem, false},
	CodeFSNotFound:      {ClassFilesystem, false},
	CodeFSWrongType:     {ClassFilesystem, false},
	CodeFSExists:        {ClassFilesystem, false},
	CodeFSNotEmpty:      {ClassFilesystem, false},
	CodeFSPermission:    {ClassFilesystem, false},
	CodeFSIO:            {ClassFilesystem, false},
	CodeFSBadRegex:      {ClassFilesystem, false},
	CodeFSStreamAborted: {ClassFilesystem, true},
	CodeFSUnsupported:   {ClassFilesystem, false},
	CodeBootFailed:      {ClassPlatform, false},
	CodeCapacity:        {ClassConfig, false},
	CodeInternal:        {ClassInternal, false},
}

// Codes lists every S-code, in table order.
func Codes() []Code {
	return []Code{
		CodeMalformed, CodeNotFound, CodeExecBusy, CodeStopped,
		CodeImageNotAllowed, CodeImageMissing, CodeImagePull, CodeOperatorOnly,
		CodeExecTimeout,
		CodeFSInvalid, CodeFSNotFound, CodeFSWrongType, CodeFSExists, CodeFSNotEmpty,
		CodeFSPermission, CodeFSIO, CodeFSBadRegex, CodeFSStreamAborted, CodeFSUnsupported,
		CodeBootFailed, CodeCapacity, CodeInternal,
	}
}

// Class reports the class of a code.
func (c Code) Class() Class { return codeInfo[c].class }

// Retryable reports whether a caller may retry an operation that failed with c.
func (c Code) Retryable() bool { return codeInfo[c].retryable }

// Error is an error with an S-code, a human message and an optional fix.
type Error struct {
	Code    Code
	Message string
	// Fix is a machine-readable hint: a payload patch that would make the
	// request succeed, or context (e.g. the inner code of a run step).
	Fix map[string]any
	// FixNote is the human version of Fix.
	FixNote string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code whose message is msg: err.
func Wrap(code Code, err error, msg string) *Error {
	return &Error{Code: code, Message: msg + ": " + err.Error(), Err: err}
}

// WithFix attaches a fix payload and note and returns e.
func (e *Error) WithFix(fix map[string]any, note string) *Error {
	e.Fix = fix
	e.FixNote = note
	return e
}

// Malformed is S001: a request the caller must fix.
func Malformed(format string, args ...any) *Error { return New(CodeMalformed, format, args...) }

// As returns the *Error in err's chain, or a CodeInternal error wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// CodeOf returns the S-code of err, CodeInternal when it has none.
func CodeOf(err error) Code { return As(err).Code }

// Is reports whether err carries code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
