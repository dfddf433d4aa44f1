package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// TestMergeKeepsOnlyTheChosenFiles: task/merge {paths} merges the files kept
// and leaves the discarded ones out of the base and in the task's branch,
// untouched; an unknown path is refused naming the field; the merge is
// undone as any other; the whole task merges after.
func TestMergeKeepsOnlyTheChosenFiles(t *testing.T) {
	e := open(t, nil, nil)
	ctx := context.Background()
	a := e.create(t, "two files", "go\n@@TOOL Bash {\"command\":\"echo kept > kept.txt; echo discarded > discarded.txt\"}\n@@TEXT Wrote both.", 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	q := e.get(t, a.ID).PendingQuestion
	if _, err := e.o.TaskRespond(ctx, &protocol.TaskRespondParams{ID: a.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, a.ID))
	branch := e.get(t, a.ID).Worktree.Branch
	tip := gitIn(t, e.repo, "rev-parse", branch)
	before := gitIn(t, e.repo, "rev-parse", "HEAD")

	for _, bad := range [][]string{{"nope.txt"}, {}, {"kept.txt", ""}} {
		p := &protocol.TaskMergeParams{ID: a.ID, Paths: bad}
		// The wire validates first, then the orchestrator knows the files.
		err := p.Validate()
		if err == nil {
			_, err = e.o.TaskMerge(ctx, p)
		}
		pe, ok := err.(*protocol.Error)
		if !ok || pe.Code != protocol.CodeInvalidParams || !strings.Contains(formatData(pe.Data), "paths") {
			t.Fatalf("merge of paths %q = %v, want invalid params naming paths", bad, err)
		}
	}
	if gitIn(t, e.repo, "rev-parse", "HEAD") != before {
		t.Fatal("a refused merge moved the base")
	}

	m, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID, Paths: []string{"kept.txt"}})
	if err != nil || m.Status != protocol.StatusMerged {
		t.Fatalf("merge of kept.txt = %+v, %v", m, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.repo, "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("kept.txt in the checkout = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "discarded.txt")); err == nil {
		t.Error("the discarded file reached the checkout")
	}
	if got := gitIn(t, e.repo, "ls-tree", "--name-only", "HEAD"); got != "kept.txt" {
		t.Errorf("the base holds %q, want kept.txt alone", got)
	}
	if got := gitIn(t, e.repo, "rev-parse", "HEAD^@"); got != before {
		t.Errorf("the kept files' commit has parents %q, want the base alone (the branch is not merged)", got)
	}
	if gitIn(t, e.repo, "rev-parse", branch) != tip || gitIn(t, e.repo, "show", branch+":discarded.txt") != "discarded" {
		t.Error("the task's branch changed")
	}

	if u, err := e.o.TaskUndo(ctx, &protocol.TaskIDParams{ID: a.ID}); err != nil || u.Status != protocol.StatusMerging {
		t.Fatalf("undo = %+v, %v", u, err)
	}
	if gitIn(t, e.repo, "rev-parse", "HEAD") != before {
		t.Fatal("undo did not restore the base")
	}
	if _, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID}); err != nil {
		t.Fatalf("merge of every file after the undo: %v", err)
	}
	if got := gitIn(t, e.repo, "ls-tree", "--name-only", "HEAD"); got != "discarded.txt\nkept.txt" {
		t.Errorf("the base holds %q after the whole merge", got)
	}
}
