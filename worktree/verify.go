package worktree

import (
	"context"
	"fmt"
)

// CheckRefAt verifies that branch points at sha: an operation that reports
// success (an undo) checks its result rather than trusting it.
func (r *Repo) CheckRefAt(ctx context.Context, branch, sha string) error {
	if err := validRef("branch", branch); err != nil {
		return err
	}
	now, err := r.revParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return fmt.Errorf("%w: branch %q: %w", ErrNotFound, branch, err)
	}
	if now != sha {
		return fmt.Errorf("%w: %s is at %s, not %s", ErrConflict, branch, short(now), short(sha))
	}
	return nil
}
