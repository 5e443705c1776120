package zerfoo

import (
	"errors"
	"fmt"
)

// Error is a failure reported by libzerfoo: its status code (ZF_ERR_*) and the library's
// message (zf_last_error). errors.Is(err, ErrIO) etc. compare the status code.
type Error struct {
	Status  int32  // ZF_ERR_* code
	Op      string // what the binding was doing, e.g. `open "/models/x.gguf"`
	Message string // zf_last_error() text
}

func (e *Error) Error() string {
	s := "zerfoo: "
	if e.Op != "" {
		s += e.Op + ": "
	}
	s += statusName(e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is an *Error with the same status (so sentinels match).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status
}

// Sentinel errors, one per status code; use with errors.Is.
var (
	ErrInvalidArgument = &Error{Status: 1}
	ErrIO              = &Error{Status: 2}
	ErrFormat          = &Error{Status: 3}
	ErrUnsupported     = &Error{Status: 4}
	ErrOutOfMemory     = &Error{Status: 5}
	ErrBufferTooSmall  = &Error{Status: 6}
	ErrNotFound        = &Error{Status: 7}
	ErrInvalidUTF8     = &Error{Status: 8}
	ErrContextFull     = &Error{Status: 9}
	ErrCancelled       = &Error{Status: 10} // also returned when a context.Context stops generation
	ErrBackend         = &Error{Status: 11}
	ErrInternal        = &Error{Status: 12}
	ErrTemplate        = &Error{Status: 13} // a chat template failed; the message has line:column
)

// ErrClosed is returned by methods of a Model or Session after Close.
var ErrClosed = errors.New("zerfoo: use of closed Model or Session")

var statusNames = [...]string{"ZF_OK", "ZF_ERR_INVALID_ARGUMENT", "ZF_ERR_IO", "ZF_ERR_FORMAT",
	"ZF_ERR_UNSUPPORTED", "ZF_ERR_OUT_OF_MEMORY", "ZF_ERR_BUFFER_TOO_SMALL", "ZF_ERR_NOT_FOUND",
	"ZF_ERR_INVALID_UTF8", "ZF_ERR_CONTEXT_FULL", "ZF_ERR_CANCELLED", "ZF_ERR_BACKEND", "ZF_ERR_INTERNAL", "ZF_ERR_TEMPLATE"}

func statusName(st int32) string {
	if st >= 0 && int(st) < len(statusNames) {
		return statusNames[st]
	}
	return fmt.Sprintf("ZF_ERR_UNKNOWN(%d)", st)
}

func newError(op string, st int32, msg string) error {
	return &Error{Status: st, Op: op, Message: msg}
}

// cancelled wraps ErrCancelled with the context's cause, so both errors.Is(err, ErrCancelled)
// and errors.Is(err, context.Canceled) hold.
func cancelled(cause error) error {
	if cause == nil {
		return fmt.Errorf("zerfoo: generate: %w", ErrCancelled)
	}
	return fmt.Errorf("zerfoo: generate: %w: %w", ErrCancelled, cause)
}
