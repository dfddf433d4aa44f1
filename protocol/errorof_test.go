package protocol_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/familiar-dev/familiar/errkind"
	"github.com/familiar-dev/familiar/protocol"
)

type conflictError struct{ files []string }

func (c *conflictError) Error() string         { return "merge conflicts in a.go" }
func (c *conflictError) Unwrap() error         { return errConflict }
func (c *conflictError) Conflicting() []string { return c.files }

var (
	errInvalid      = errkind.New(errkind.Invalid, "invalid argument")
	errNotFound     = errkind.New(errkind.NotFound, "not found")
	errPrecondition = errkind.New(errkind.FailedPrecondition, "agent is not ready for input")
	errConflict     = errkind.New(errkind.Conflict, "conflict")
	errUnavailable  = errkind.New(errkind.Unavailable, "claude CLI unavailable")
	errFull         = errkind.NewReason(errkind.NotSaved, "store is full: no space left on the disk", "full")
	errStoreDown    = errkind.NewReason(errkind.NotSaved, "store is unavailable", "unavailable")
)

// Every kind of domain error becomes one protocol error, in ErrorOf: code,
// message, and the data that names what to fix.
func TestErrorOfMapsEveryKind(t *testing.T) {
	given := protocol.Conflict("already a protocol error", []string{"x"})
	for _, c := range []struct {
		name string
		err  error
		ctx  protocol.ErrorContext
		code int    // 0: not a protocol error
		msg  string // the error's text
		data string // the JSON of its data ("" for none)
	}{
		{"nil", nil, protocol.ErrorContext{What: "merge"}, 0, "", ""},
		{"protocol error as it is", fmt.Errorf("wrapped: %w", given), protocol.ErrorContext{What: "merge"}, protocol.CodeConflict, "already a protocol error", `{"files":["x"]}`},
		{"invalid names the field", fmt.Errorf("%w: ref starts with -", errInvalid), protocol.ErrorContext{What: "merge", Field: "strategy"},
			protocol.CodeInvalidParams, "merge: invalid argument: ref starts with -", `{"field":"strategy"}`},
		{"invalid without what", errInvalid, protocol.ErrorContext{Field: "cursor"}, protocol.CodeInvalidParams, "invalid argument", `{"field":"cursor"}`},
		{"not found names the thing", fmt.Errorf("%w: q7", errNotFound), protocol.ErrorContext{Thing: "question"},
			protocol.CodeNotFound, `No question with id "not found: q7" exists.`, `{"kind":"question","id":"not found: q7"}`},
		{"not found, thing from what", errNotFound, protocol.ErrorContext{What: "task"}, protocol.CodeNotFound, `No task with id "not found" exists.`, `{"kind":"task","id":"not found"}`},
		{"failed precondition with status", errPrecondition, protocol.ErrorContext{Status: protocol.StatusWaiting},
			protocol.CodeFailedPrecondition, "agent is not ready for input", `{"status":"waiting"}`},
		{"conflict carries files", fmt.Errorf("rebase: %w", &conflictError{files: []string{"a.go"}}), protocol.ErrorContext{What: "the merge conflicts; nothing was changed"},
			protocol.CodeConflict, "the merge conflicts; nothing was changed: rebase: merge conflicts in a.go", `{"files":["a.go"]}`},
		{"conflict without files", errConflict, protocol.ErrorContext{What: "create worktree"}, protocol.CodeConflict, "create worktree: conflict", `{"files":[]}`},
		{"unavailable", errUnavailable, protocol.ErrorContext{What: "start"}, protocol.CodeUnavailable, "start: claude CLI unavailable", ""},
		{"not saved: full", fmt.Errorf("save: %w", errFull), protocol.ErrorContext{What: "task/create"}, protocol.CodeInternalError,
			"task/create: not saved, so not done: the disk holding familiar's data is full (save: store is full: no space left on the disk)", `{"store":"full"}`},
		{"not saved: unavailable", errStoreDown, protocol.ErrorContext{What: "task/create"}, protocol.CodeInternalError,
			"task/create: not saved, so not done: store is unavailable", `{"store":"unavailable"}`},
		{"no kind stays internal", errors.New("git exited 128"), protocol.ErrorContext{What: "diff"}, 0, "diff: git exited 128", ""},
		{"no kind, no what", errors.New("git exited 128"), protocol.ErrorContext{}, 0, "git exited 128", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := protocol.ErrorOf(c.err, c.ctx)
			if c.err == nil {
				if got != nil {
					t.Fatalf("ErrorOf(nil) = %v", got)
				}
				return
			}
			var pe *protocol.Error
			isPE := errors.As(got, &pe)
			switch {
			case c.code == 0 && isPE:
				t.Fatalf("got protocol error %d %q, want none", pe.Code, pe.Message)
			case c.code == 0:
				if got.Error() != c.msg || !errors.Is(got, c.err) {
					t.Fatalf("got %q (wrapping the error: %v), want %q", got, errors.Is(got, c.err), c.msg)
				}
				return
			case !isPE:
				t.Fatalf("got %v, want protocol error %d", got, c.code)
			}
			if pe.Code != c.code || pe.Message != c.msg {
				t.Errorf("got %d %q, want %d %q", pe.Code, pe.Message, c.code, c.msg)
			}
			data := ""
			if pe.Data != nil {
				b, _ := json.Marshal(pe.Data)
				data = string(b)
			}
			if data != c.data {
				t.Errorf("data %s, want %s", data, c.data)
			}
		})
	}
}

// What a client is sent: a protocol error as it is, a cancelled request
// -32800, anything else -32603 with a fixed sentence (its text to the log),
// even a domain error of a kind that no method mapped.
func TestWireHidesInternalText(t *testing.T) {
	for _, c := range []struct {
		name     string
		err      error
		code     int
		msg      string
		internal bool
	}{
		{"protocol error", protocol.InvalidParams("title", "title is empty"), protocol.CodeInvalidParams, "title is empty", false},
		{"empty message gets one", &protocol.Error{Code: protocol.CodeUnavailable}, protocol.CodeUnavailable, "familiar could not complete the request.", false},
		{"cancelled", fmt.Errorf("list: %w", context.Canceled), protocol.CodeRequestCancelled, "The request was cancelled.", false},
		{"kind no method mapped", fmt.Errorf("checkpoint: %w", errUnavailable), protocol.CodeInternalError, "familiar failed with an internal error; its log has the details.", true},
		{"internal", errors.New("open /home/me/.token: permission denied"), protocol.CodeInternalError, "familiar failed with an internal error; its log has the details.", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pe, internal := protocol.Wire(c.err)
			if pe.Code != c.code || pe.Message != c.msg || internal != c.internal {
				t.Errorf("Wire = %d %q internal=%v, want %d %q internal=%v", pe.Code, pe.Message, internal, c.code, c.msg, c.internal)
			}
		})
	}
}
