package protocol

import (
	"context"
	"errors"
	"fmt"

	"github.com/familiar-dev/familiar/errkind"
)

// ErrorContext is what the caller of ErrorOf knows and the error does not:
// the request it was serving.
type ErrorContext struct {
	// What is the operation, put before the error's text ("merge: …");
	// "" puts nothing.
	What string
	// Thing is what a NotFound is about ("task", "question"); What if "".
	Thing string
	// Field is the request field an Invalid value came from.
	Field string
	// Status is the task's status, for a FailedPrecondition.
	Status Status
}

// ErrorOf is the one place where a domain error becomes a protocol error:
// by its kind (package errkind), never by its text or its package's
// sentinels. A protocol error in err's chain passes through as it is; an
// error of no kind is returned wrapped with What, for the transport to
// answer as internal (Wire).
func ErrorOf(err error, c ErrorContext) error {
	var pe *Error
	if err == nil || errors.As(err, &pe) {
		return err
	}
	msg := err.Error()
	if c.What != "" {
		msg = c.What + ": " + msg
	}
	switch errkind.Of(err) {
	case errkind.Invalid:
		return InvalidParams(c.Field, msg)
	case errkind.NotFound:
		thing := c.Thing
		if thing == "" {
			thing = c.What
		}
		return NotFound(thing, err.Error())
	case errkind.FailedPrecondition:
		return FailedPrecondition(msg, c.Status)
	case errkind.Conflict:
		return Conflict(msg, errkind.Conflicting(err))
	case errkind.Unavailable:
		return Unavailable(msg)
	case errkind.NotSaved:
		reason := errkind.ReasonOf(err)
		if reason == "full" {
			return StoreFailure(fmt.Sprintf("%s: not saved, so not done: the disk holding familiar's data is full (%v)", c.What, err), reason)
		}
		return StoreFailure(fmt.Sprintf("%s: not saved, so not done: %v", c.What, err), reason)
	}
	if c.What == "" {
		return err
	}
	return fmt.Errorf("%s: %w", c.What, err)
}

// Wire is the error a client is sent for a method's err: a protocol error as
// it is; a cancelled request -32800; anything else -32603 with a fixed
// sentence (internal says so: the transport logs err instead). That includes
// a domain error no method passed through ErrorOf: only a method knows the
// request well enough to say which field was wrong, and the error's text,
// from deep down, may hold paths, command lines or a remote's URL.
func Wire(err error) (e *Error, internal bool) {
	var pe *Error
	if errors.Is(err, context.Canceled) && !errors.As(err, &pe) {
		return &Error{Code: CodeRequestCancelled, Message: "The request was cancelled."}, false
	}
	if errors.As(err, &pe) {
		if pe.Message == "" {
			return &Error{Code: pe.Code, Message: "familiar could not complete the request.", Data: pe.Data}, false
		}
		return pe, false
	}
	return &Error{Code: CodeInternalError, Message: "familiar failed with an internal error; its log has the details."}, true
}
