package protocol

import "fmt"

// JSON-RPC error codes of PROTOCOL.md.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternalError        = -32603
	CodeServerNotInitialized = -32002
	CodeRequestCancelled     = -32800
	CodeNotFound             = -32001
	CodeFailedPrecondition   = -32003
	CodeConflict             = -32004
	CodeUnavailable          = -32005
)

// Error is an error a client is meant to see: Code is one of the codes above,
// Message one sentence a person can act on, Data (optional) is sent as the
// JSON-RPC error's data. Return it (wrapped with %w if useful) from a Server
// method; package jsonrpc finds it with errors.As.
type Error struct {
	Code    int
	Message string
	Data    any
}

func (e *Error) Error() string { return e.Message }

// Is lets errors.Is test an error's kind: a target *Error with only a Code
// matches every error of that code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// ErrorData is the data of the errors made by this package's constructors;
// each sets only the fields PROTOCOL.md names for its code.
type ErrorData struct {
	// Field is the JSON path of the offending param (-32602).
	Field string `json:"field,omitempty"`
	// Status is the task's state that forbade the action (-32003).
	Status Status `json:"status,omitempty"`
	// Files are the conflicting paths (-32004). omitzero, not omitempty, so
	// a Conflict sends [] rather than no files key.
	Files []string `json:"files,omitzero"`
	// Kind and ID say what was not found (-32001).
	Kind string `json:"kind,omitempty"`
	ID   string `json:"id,omitempty"`
	// Store says why familiar could not save (-32603): "full" (the disk is
	// full; it recovers by itself when there is space) or "unavailable".
	Store string `json:"store,omitempty"`
}

// InvalidParams reports a missing, ill-typed or out-of-range param. field is
// its JSON path ("title", "settings.maxConcurrent", "acceptanceCriteria[2]");
// msg is the sentence shown to the person.
func InvalidParams(field, msg string) *Error {
	return &Error{Code: CodeInvalidParams, Message: msg, Data: &ErrorData{Field: field}}
}

// NotFound reports an unknown id; what is the kind of thing ("task",
// "question", "skill", "profile").
func NotFound(what, id string) *Error {
	return &Error{
		Code:    CodeNotFound,
		Message: fmt.Sprintf("No %s with id %q exists.", what, id),
		Data:    &ErrorData{Kind: what, ID: id},
	}
}

// FailedPrecondition reports an action the task's state does not allow.
func FailedPrecondition(msg string, status Status) *Error {
	return &Error{Code: CodeFailedPrecondition, Message: msg, Data: &ErrorData{Status: status}}
}

// Conflict reports a merge that conflicts in files.
func Conflict(msg string, files []string) *Error {
	return &Error{Code: CodeConflict, Message: msg, Data: &ErrorData{Files: nonNil(files)}}
}

// Unavailable reports a missing tool (claude, git) or a data dir held by
// another familiar.
func Unavailable(msg string) *Error {
	return &Error{Code: CodeUnavailable, Message: msg}
}

// StoreFailure reports a change familiar could not save, so it did not
// make it: kind is "full" or "unavailable" (ErrorData.Store).
func StoreFailure(msg, kind string) *Error {
	return &Error{Code: CodeInternalError, Message: msg, Data: &ErrorData{Store: kind}}
}

// ServerNotInitialized answers any method called before initialize.
func ServerNotInitialized() *Error {
	return &Error{Code: CodeServerNotInitialized, Message: "Call initialize before any other method."}
}

// MethodNotFound answers a method familiar does not know.
func MethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("familiar has no method %q.", method)}
}

// InvalidRequest reports a message that is not a usable JSON-RPC 2.0 request.
func InvalidRequest(msg string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: msg}
}

// ParseError reports a frame body that is not JSON.
func ParseError(msg string) *Error {
	return &Error{Code: CodeParseError, Message: msg}
}
