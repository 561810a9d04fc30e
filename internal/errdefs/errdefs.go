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
	"strings"
	"syscall"
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
	CodePaused          Code = "S005" // sandbox paused (hutch's own)
	CodeNoSnapshot      Code = "S006" // no snapshot with that id (hutch's own)
	CodeNoTemplate      Code = "S007" // no template of that name (hutch's own)
	CodeImageNotAllowed Code = "S100" // image not in catalog or allowlist
	CodeImageMissing    Code = "S101" // rootfs missing and auto_install false
	CodeImagePull       Code = "S102" // pull/unpack/build failed
	CodeOperatorOnly    Code = "S110" // an operator action asked by another owner (hutch's own)
	CodeImageInUse      Code = "S111" // image removal refused: sandboxes use it (hutch's own)
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
	CodeProcessNotFound Code = "S230" // no process with that pid in the sandbox (hutch's own)
	CodeProcessExited   Code = "S231" // the process has exited (hutch's own)
	CodeNoStdin         Code = "S232" // the process has no open stdin (hutch's own)
	CodeNotPty          Code = "S233" // the process has no terminal (hutch's own)
	CodeProcessLimit    Code = "S234" // processes or terminals per sandbox reached (hutch's own)
	CodeNoContext       Code = "S240" // no interpreter context with that id (hutch's own)
	CodeContextDead     Code = "S241" // the context's interpreter has exited (hutch's own)
	CodeNoInterpreter   Code = "S242" // the image has no interpreter of that language (hutch's own)
	CodeNoNetwork       Code = "S250" // no sandbox network of that name, or the sandbox is not on it (hutch's own)
	CodeNetworkInUse    Code = "S251" // the network exists already, or has members (hutch's own)
	CodeNotNetworked    Code = "S252" // the sandbox was created without network: true (hutch's own)
	CodeNoVolume        Code = "S260" // no volume of that name (hutch's own)
	CodeVolumeExists    Code = "S261" // a volume of that name exists already (hutch's own)
	CodeVolumeInUse     Code = "S262" // the volume is mounted by a live sandbox (hutch's own)
	CodeVolumeInvalid   Code = "S263" // a bad volume name or size (hutch's own)
	CodeVolumeMount     Code = "S264" // a bad volume mount: path, or two on one path (hutch's own)
	CodeVolumeRefused   Code = "S265" // the operation cannot keep a sandbox's volumes (hutch's own)
	CodeNoVolumes       Code = "S266" // the host cannot make volumes (hutch's own)
	CodeGitNotRepo      Code = "S270" // git: the path is not in a repository (hutch's own)
	CodeGitAuth         Code = "S271" // git: the remote refused the credentials (hutch's own)
	CodeGitNoRemote     Code = "S272" // git: no such remote, repository or remote branch (hutch's own)
	CodeGitConflict     Code = "S273" // git: a merge or rebase stopped on conflicts (hutch's own)
	CodeGitNothing      Code = "S274" // git: nothing to commit (hutch's own)
	CodeGitFailed       Code = "S275" // git refused or failed otherwise (hutch's own)
	CodeNoSecret        Code = "S280" // issue 37: no secret of that name (hutch's own)
	CodeBootFailed      Code = "S300" // runtime could not start the sandbox
	CodeShuttingDown    Code = "S301" // the daemon is shutting down (hutch's own)
	CodeUnsupported     Code = "S302" // the runtime lacks the ability asked for (hutch's own)
	CodeCapacity        Code = "S400" // capacity or per-image cap exceeded
	CodeQuota           Code = "S401" // issue 38: an owner's quota reached (hutch's own)
	CodeDiskFull        Code = "S402" // issue 38: the daemon's disk is full (hutch's own)
	CodeInternal        Code = "S500" // a bug or host failure outside the contract
)

// Kind is what an error asks of its caller, whatever the contract's class
// of its code: each transport maps kinds, never codes, to its own statuses.
type Kind int

// The kinds of errors.
const (
	KindInternal     Kind = iota // a bug or host failure
	KindInvalid                  // the request must change
	KindNotFound                 // what it names does not exist
	KindConflict                 // the target's state refuses it now
	KindForbidden                // the caller may not do it
	KindPrecondition             // the operator must set something up first
	KindCapacity                 // a limit is reached; free something first
	KindTimeout                  // it ran out of time
	KindUnavailable              // it may succeed if retried later
)

// codeInfo is the fixed class, kind and retryability of each code.
var codeInfo = map[Code]struct {
	class     Class
	kind      Kind
	retryable bool
}{
	CodeMalformed:       {ClassValidation, KindInvalid, false},
	CodeNotFound:        {ClassValidation, KindNotFound, false},
	CodeExecBusy:        {ClassValidation, KindConflict, false},
	CodeStopped:         {ClassValidation, KindConflict, false},
	CodePaused:          {ClassValidation, KindConflict, false},
	CodeNoSnapshot:      {ClassValidation, KindNotFound, false},
	CodeNoTemplate:      {ClassValidation, KindNotFound, false},
	CodeImageNotAllowed: {ClassConfig, KindForbidden, false},
	CodeImageMissing:    {ClassInternal, KindPrecondition, false},
	CodeImagePull:       {ClassTransient, KindUnavailable, true},
	CodeOperatorOnly:    {ClassConfig, KindForbidden, false},
	CodeImageInUse:      {ClassValidation, KindConflict, false},
	CodeExecTimeout:     {ClassExecution, KindTimeout, false},
	CodeFSInvalid:       {ClassFilesystem, KindInvalid, false},
	CodeFSNotFound:      {ClassFilesystem, KindNotFound, false},
	CodeFSWrongType:     {ClassFilesystem, KindConflict, false},
	CodeFSExists:        {ClassFilesystem, KindConflict, false},
	CodeFSNotEmpty:      {ClassFilesystem, KindConflict, false},
	CodeFSPermission:    {ClassFilesystem, KindForbidden, false},
	CodeFSIO:            {ClassFilesystem, KindInternal, false},
	CodeFSBadRegex:      {ClassFilesystem, KindInvalid, false},
	CodeFSStreamAborted: {ClassFilesystem, KindUnavailable, true},
	CodeFSUnsupported:   {ClassFilesystem, KindInvalid, false},
	CodeProcessNotFound: {ClassExecution, KindNotFound, false},
	CodeProcessExited:   {ClassExecution, KindConflict, false},
	CodeNoStdin:         {ClassExecution, KindConflict, false},
	CodeNotPty:          {ClassExecution, KindConflict, false},
	CodeNoNetwork:       {ClassValidation, KindNotFound, false},
	CodeNetworkInUse:    {ClassValidation, KindConflict, false},
	CodeNotNetworked:    {ClassValidation, KindConflict, false},
	CodeNoVolume:        {ClassValidation, KindNotFound, false},
	CodeVolumeExists:    {ClassValidation, KindConflict, false},
	CodeVolumeInUse:     {ClassValidation, KindConflict, false},
	CodeVolumeInvalid:   {ClassValidation, KindInvalid, false},
	CodeVolumeMount:     {ClassValidation, KindInvalid, false},
	CodeVolumeRefused:   {ClassValidation, KindConflict, false},
	CodeNoVolumes:       {ClassPlatform, KindPrecondition, false},
	CodeGitNotRepo:      {ClassValidation, KindNotFound, false},
	CodeGitAuth:         {ClassValidation, KindForbidden, false},
	CodeGitNoRemote:     {ClassValidation, KindNotFound, false},
	CodeGitConflict:     {ClassExecution, KindConflict, false},
	CodeGitNothing:      {ClassValidation, KindConflict, false},
	CodeGitFailed:       {ClassExecution, KindConflict, false},
	CodeNoSecret:        {ClassValidation, KindNotFound, false}, // issue 37
	CodeProcessLimit:    {ClassExecution, KindCapacity, false},
	CodeNoContext:       {ClassValidation, KindNotFound, false},
	CodeContextDead:     {ClassExecution, KindConflict, false},
	CodeNoInterpreter:   {ClassConfig, KindPrecondition, false},
	CodeBootFailed:      {ClassPlatform, KindUnavailable, false},
	CodeShuttingDown:    {ClassTransient, KindUnavailable, true},
	CodeUnsupported:     {ClassPlatform, KindPrecondition, false},
	CodeCapacity:        {ClassConfig, KindCapacity, false},
	CodeQuota:           {ClassConfig, KindCapacity, false},     // issue 38
	CodeDiskFull:        {ClassPlatform, KindUnavailable, true}, // issue 38
	CodeInternal:        {ClassInternal, KindInternal, false},
}

// Codes lists every S-code, in table order.
func Codes() []Code {
	return []Code{
		CodeMalformed, CodeNotFound, CodeExecBusy, CodeStopped, CodePaused, CodeNoSnapshot, CodeNoTemplate,
		CodeImageNotAllowed, CodeImageMissing, CodeImagePull, CodeOperatorOnly, CodeImageInUse,
		CodeExecTimeout,
		CodeFSInvalid, CodeFSNotFound, CodeFSWrongType, CodeFSExists, CodeFSNotEmpty,
		CodeFSPermission, CodeFSIO, CodeFSBadRegex, CodeFSStreamAborted, CodeFSUnsupported,
		CodeProcessNotFound, CodeProcessExited, CodeNoStdin, CodeNotPty, CodeProcessLimit,
		CodeNoContext, CodeContextDead, CodeNoInterpreter,
		CodeNoNetwork, CodeNetworkInUse, CodeNotNetworked,
		CodeNoVolume, CodeVolumeExists, CodeVolumeInUse, CodeVolumeInvalid, CodeVolumeMount, CodeVolumeRefused, CodeNoVolumes,
		CodeGitNotRepo, CodeGitAuth, CodeGitNoRemote, CodeGitConflict, CodeGitNothing, CodeGitFailed,
		CodeNoSecret, // issue 37
		CodeBootFailed, CodeShuttingDown, CodeUnsupported, CodeCapacity, CodeInternal,
		CodeQuota, CodeDiskFull, // issue 38
	}
}

// Class reports the class of a code.
func (c Code) Class() Class { return codeInfo[c].class }

// Kind reports what a code asks of its caller.
func (c Code) Kind() Kind { return codeInfo[c].kind }

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

// ShuttingDown is S301: the daemon is shutting down and takes no new work.
func ShuttingDown() *Error {
	return New(CodeShuttingDown, "the daemon is shutting down").WithFix(nil, "retry once the daemon is back")
}

// WithFix attaches a fix payload and note and returns e.
func (e *Error) WithFix(fix map[string]any, note string) *Error {
	e.Fix = fix
	e.FixNote = note
	return e
}

// Malformed is S001: a request the caller must fix.
func Malformed(format string, args ...any) *Error { return New(CodeMalformed, format, args...) }

// Because sets e's underlying cause, kept out of its message (a runtime's
// output, say), and returns e.
func (e *Error) Because(err error) *Error {
	e.Err = err
	return e
}

// As returns the *Error in err's chain, or a CodeInternal error wrapping err.
// When err wraps that *Error with context of its own ("recording sandbox X:
// %w"), the result is a copy whose message is err's whole message, so the
// outer context is never lost. A host failure (S500, S300, S102) whose
// cause is a full disk is S402 (DiskFull).
func As(err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeInternal, Message: err.Error(), Err: err}
	} else if msg := err.Error(); msg != e.Error() {
		c := *e
		c.Message, c.Err = msg, err
		e = &c
	}
	switch e.Code {
	case CodeInternal, CodeBootFailed, CodeImagePull:
		if diskFull(err) {
			return DiskFull(e)
		}
	}
	return e
}

// DiskFull is S402 for cause, a host failure for want of disk space.
func DiskFull(cause error) *Error {
	return (&Error{Code: CodeDiskFull, Message: "the daemon's disk is full: " + cause.Error(), Err: cause}).
		WithFix(nil, "free space on the daemon's data dir (delete snapshots, templates, volumes or unused images), then retry")
}

// diskFull reports whether err, or an error in its chain, is ENOSPC or
// EDQUOT, or says so in its text (a runtime's output carries no errno).
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	for ; err != nil; err = errors.Unwrap(err) {
		msg := strings.ToLower(err.Error())
		if strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error()) {
			return true
		}
	}
	return false
}

// CodeOf returns the S-code of err, CodeInternal when it has none.
func CodeOf(err error) Code { return As(err).Code }

// Is reports whether err carries code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
