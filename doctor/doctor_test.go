package doctor

import (
	"strings"
	"testing"
)

// A worktree root with a space warns, naming configure and the fix, without
// failing doctor; an ordinary one is fine.
func TestWorktreesPathCheck(t *testing.T) {
	c := worktreesPathCheck("/Users/ann/Library/Application Support/familiar/worktrees")
	if c.OK || c.Blocking || !strings.Contains(c.Detail, "a space") || !strings.Contains(c.Detail, "configure") || c.Hint == "" {
		t.Errorf("a root with a space: %+v", c)
	}
	if c := worktreesPathCheck("/Users/ann/.familiar/worktrees"); !c.OK {
		t.Errorf("an ordinary root: %+v", c)
	}
}
