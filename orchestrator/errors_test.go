package orchestrator

import (
	"errors"
	"fmt"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/mcp"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/worktree"
)

// The errors of the packages below reach clients by their kind, each with
// the code the methods gave it when they listed the packages' sentinels.
func TestDomainErrorsMapByKind(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		code  int
		field string // ErrorData.Field
	}{
		{"worktree invalid", fmt.Errorf("%w: ref %q", worktree.ErrInvalid, "-x"), protocol.CodeInvalidParams, "strategy"},
		{"store invalid cursor", fmt.Errorf("%w: cursor", store.ErrInvalid), protocol.CodeInvalidParams, "strategy"},
		{"worktree not found", worktree.ErrNotFound, protocol.CodeNotFound, ""},
		{"store not found", store.ErrNotFound, protocol.CodeNotFound, ""},
		{"worktree precondition", worktree.ErrFailedPrecondition, protocol.CodeFailedPrecondition, ""},
		{"dirty checkout", &worktree.DirtyError{Checkout: "/repo", Files: []string{"a"}}, protocol.CodeFailedPrecondition, ""},
		{"worktree conflict", worktree.ErrConflict, protocol.CodeConflict, ""},
		{"merge conflict", &worktree.ConflictError{Files: []string{"a.go"}}, protocol.CodeConflict, ""},
		{"git unavailable", worktree.ErrUnavailable, protocol.CodeUnavailable, ""},
		{"claude unavailable", fmt.Errorf("%w: no claude path", agent.ErrCLIUnavailable), protocol.CodeUnavailable, ""},
		{"claude did not start", &agent.StartError{Transient: true, Err: errors.New("fork: resource busy")}, protocol.CodeUnavailable, ""},
		{"store locked", store.ErrLocked, protocol.CodeUnavailable, ""},
		{"store full", store.ErrStoreFull, protocol.CodeInternalError, ""},
		{"store unavailable", store.ErrUnavailable, protocol.CodeInternalError, ""},
		{"profile not found", fmt.Errorf("%w: profile x", profiles.ErrNotFound), protocol.CodeInvalidParams, "strategy"},
		{"profile file", &profiles.FileError{Path: "p.yaml", Line: 3, Message: "bad"}, protocol.CodeInvalidParams, "strategy"},
		{"mcp invalid", mcp.ErrInvalid, protocol.CodeInvalidParams, "strategy"},
		{"mcp env unset", mcp.ErrUnavailable, protocol.CodeUnavailable, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pe *protocol.Error
			if !errors.As(mapError(c.err, "merge", "strategy"), &pe) {
				t.Fatalf("%v is not a protocol error", c.err)
			}
			field := ""
			if d, ok := pe.Data.(*protocol.ErrorData); ok {
				field = d.Field
			}
			if pe.Code != c.code || field != c.field {
				t.Errorf("code %d field %q, want %d %q (%s)", pe.Code, field, c.code, c.field, pe.Message)
			}
		})
	}
	// Errors of no kind stay internal: their text is for the log.
	if err := mapError(errors.New("git exited 128"), "diff", ""); errors.As(err, new(*protocol.Error)) {
		t.Errorf("an unkinded error became %v", err)
	}
}

// An answer the agent refuses is the client's error, named.
func TestAnswerErrors(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   int
		field  string
		status protocol.Status
	}{
		{fmt.Errorf("%w: q3", agent.ErrNoQuestion), protocol.CodeNotFound, "", ""},
		{fmt.Errorf("%w: unknown option", agent.ErrBadAnswer), protocol.CodeInvalidParams, "optionId", ""},
		{fmt.Errorf("%w: stopped", agent.ErrNotReady), protocol.CodeFailedPrecondition, "", protocol.StatusWaiting},
	} {
		var pe *protocol.Error
		if !errors.As(answerError(c.err), &pe) {
			t.Fatalf("%v is not a protocol error", c.err)
		}
		d, _ := pe.Data.(*protocol.ErrorData)
		if pe.Code != c.code || d.Field != c.field || d.Status != c.status {
			t.Errorf("%v: %d %+v, want %d field %q status %q", c.err, pe.Code, d, c.code, c.field, c.status)
		}
		if c.code == protocol.CodeNotFound && d.Kind != "question" {
			t.Errorf("not found names %q, want question", d.Kind)
		}
	}
}
