package orchestrator

import (
	"errors"
	"fmt"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/worktree"
)

// mapError is the one place where errors of the packages below become
// protocol errors. what names the operation; field names the request field
// an invalid value came from, so the client knows what to fix.
func mapError(err error, what, field string) error {
	var pe *protocol.Error
	var dirty *worktree.DirtyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return err
	case errors.As(err, &dirty):
		return protocol.FailedPrecondition(fmt.Sprintf("%s: %v", what, err), "")
	case errors.Is(err, worktree.ErrInvalid), errors.Is(err, store.ErrInvalid):
		return protocol.InvalidParams(field, fmt.Sprintf("%s: %v", what, err))
	case errors.Is(err, worktree.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return protocol.NotFound(what, err.Error())
	case errors.Is(err, worktree.ErrConflict):
		return protocol.Conflict(fmt.Sprintf("%s: %v", what, err), nil)
	case errors.Is(err, worktree.ErrFailedPrecondition):
		return protocol.FailedPrecondition(fmt.Sprintf("%s: %v", what, err), "")
	case errors.Is(err, store.ErrStoreFull):
		return protocol.StoreFailure(fmt.Sprintf("%s: not saved, so not done: the disk holding familiar's data is full (%v)", what, err), "full")
	case errors.Is(err, store.ErrUnavailable):
		return protocol.StoreFailure(fmt.Sprintf("%s: not saved, so not done: %v", what, err), "unavailable")
	case errors.Is(err, agent.ErrCLIUnavailable), errors.Is(err, worktree.ErrUnavailable):
		return protocol.Unavailable(fmt.Sprintf("%s: %v", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}
