package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/texts"
)

// A turn that ends with a question in the middle of its closing paragraph
// ("…? Let me know.") leaves the task waiting on the person, never "ready to
// merge"; the suggested answers become options, and choosing one continues
// the conversation with its words.
func TestProseQuestionMidParagraphWaits(t *testing.T) {
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{Text: "I looked at the persistence layer; both backends would work. Should I use Postgres or SQLite? Let me know.\n\n1. Postgres\n2. SQLite"},
		fakeapi.Reply{Text: "Using SQLite as you chose. Done."},
	))
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliar(t, repo, api)
	c := f.client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "pick a database", "description": "Add storage."}, &task)
	n, next := c.WaitNotification(0, "task/question", editor.Method("task/question", task.ID))
	var qn protocol.TaskQuestionNotification
	if err := json.Unmarshal(n.Params, &qn); err != nil {
		t.Fatal(err)
	}
	if qn.Question.Kind != protocol.QuestionQuestion || !qn.Question.AllowText || len(qn.Question.Options) != 2 || qn.Question.Options[1].Label != "SQLite" {
		t.Fatalf("question = %s", n.Params)
	}
	var got protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &got)
	if got.Status != protocol.StatusWaiting || got.PendingQuestion == nil || got.PendingQuestion.ID != qn.Question.ID {
		t.Fatalf("task after the question: status %s, pending %+v", got.Status, got.PendingQuestion)
	}
	for _, m := range c.Notifications() {
		if m.Method == "task/completed" {
			t.Fatalf("the task claimed completion while asking: %s", m.Params)
		}
	}
	c.Result("task/respond", map[string]any{"id": task.ID, "questionId": qn.Question.ID, "optionId": "2"}, nil)
	c.WaitNotification(next, "task/completed", editor.Method("task/completed", task.ID))
	reqs := api.MainRequests()
	if last := reqs[len(reqs)-1]; !json.Valid(last.Raw) || !strings.Contains(string(last.Raw), "SQLite") {
		t.Errorf("the answer did not reach the model: %.400s", last.Raw)
	}
}

// A closing message the classifier cannot call (a question early, a report
// after it) also waits, marked unsure; the person marks it done and the task
// finishes like any turn.
func TestUnsureClosingWaitsAndMarkDone(t *testing.T) {
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{Text: "Do you want the old API kept? I removed nothing yet.\n\nI added the new endpoint, its request validation, the handler tests and a section in the API documentation."},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "new endpoint", "description": "Add it."}, &task)
	n, next := c.WaitNotification(0, "task/question", editor.Method("task/question", task.ID))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(n.Params, &qn)
	if qn.Question.Kind != protocol.QuestionQuestion || qn.Question.Closing != "unsure" {
		t.Fatalf("question = %s", n.Params)
	}
	if m := c.Call("task/markDone", map[string]any{"id": task.ID, "questionId": "nope"}); m.Error == nil || m.Error.Code != protocol.CodeNotFound {
		t.Fatalf("markDone with a wrong question id = %+v", m.Error)
	}
	c.Result("task/markDone", map[string]any{"id": task.ID}, nil)
	c.WaitNotification(next, "task/completed", editor.Method("task/completed", task.ID))
	var got protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &got)
	if got.Status != protocol.StatusMerging || got.Result == nil || !strings.Contains(got.Result.Summary, "new endpoint") {
		t.Fatalf("after markDone: %s %+v", got.Status, got.Result)
	}
	// Marking done again is refused: nothing waits now.
	if m := c.Call("task/markDone", map[string]any{"id": task.ID}); m.Error == nil || m.Error.Code != protocol.CodeFailedPrecondition {
		t.Fatalf("second markDone = %+v", m.Error)
	}
}

// "Allow always" names its rule; the grant is kept with the task, so after a
// pause and resume (a new claude process) familiar's policy answers the same
// kind of call without asking; it is listed, revocable and audited.
func TestAllowAlwaysSurvivesPauseResume(t *testing.T) {
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "npm test"}}}},
		fakeapi.Reply{Text: "still thinking", Delay: 10 * time.Minute}, // paused during this request
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "npm test --silent"}}}},
		fakeapi.Reply{Text: "Ran the tests twice."},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "status", "description": "Check the status."}, &task)
	n, next := c.WaitNotification(0, "permission", editor.Method("task/question", task.ID, `"kind":"permission"`))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(n.Params, &qn)
	var always *protocol.Option
	for i, o := range qn.Question.Options {
		if o.ID == "allow_always" {
			always = &qn.Question.Options[i]
		}
		if o.ID == "mode_accept_edits" {
			t.Errorf("a Bash question offers a mode switch: %+v", o)
		}
	}
	if always == nil || always.Rule != "Bash(npm test:*)" || !strings.Contains(always.Label, "Bash(npm test:*)") {
		t.Fatalf("allow-always option = %+v", always)
	}
	c.Result("task/respond", map[string]any{"id": task.ID, "questionId": qn.Question.ID, "optionId": "allow_always"}, nil)
	// The second request (the delayed one) is in flight: pause there.
	if _, ok := api.WaitFor(func(rs []fakeapi.Request) bool { return len(mainOnly(rs)) >= 2 }, 30*time.Second); !ok {
		t.Fatal("the second request never came")
	}
	c.Result("task/pause", map[string]any{"id": task.ID}, nil)
	c.WaitNotification(next, "paused", editor.Method("task/updated", task.ID, `"status":"paused"`))
	var paused protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &paused)
	if paused.Status != protocol.StatusPaused || len(paused.Grants) != 1 || paused.Grants[0].Rule != "Bash(npm test:*)" || paused.Grants[0].Scope != protocol.GrantTask {
		t.Fatalf("paused task: %s grants %+v", paused.Status, paused.Grants)
	}
	resumedAt := len(c.Notifications())
	c.Result("task/resume", map[string]any{"id": task.ID}, nil)
	// The new session's call is decided by the grant, not asked.
	r, _ := c.WaitNotification(next, "policy decision", editor.Method("task/questionResolved", task.ID, `"decidedBy":"policy"`))
	if !strings.Contains(string(r.Params), `"optionId":"allow"`) {
		t.Fatalf("resolved = %s", r.Params)
	}
	c.WaitNotification(next, "completed", editor.Method("task/completed", task.ID))
	for _, m := range c.Notifications()[resumedAt:] {
		if m.Method == "task/updated" && strings.Contains(string(m.Params), `"status":"waiting"`) {
			t.Fatalf("the person was asked again after the resume: %.300s", m.Params)
		}
	}
	var audit protocol.AuditListResult
	c.Result("audit/list", map[string]any{"taskId": task.ID, "limit": 200}, &audit)
	granted, decided := false, false
	for _, e := range audit.Entries {
		d := string(e.Data)
		granted = granted || (e.Action == "policy.granted" && strings.Contains(d, "Bash(npm test:*)"))
		decided = decided || (e.Action == "permission.decided" && e.Actor == "policy" && strings.Contains(d, "Bash(npm test:*)"))
	}
	if !granted || !decided {
		t.Errorf("audit: granted %v, decided by the grant %v", granted, decided)
	}
	var list protocol.PolicyListResult
	c.Result("policy/list", map[string]any{"taskId": task.ID}, &list)
	if len(list.Grants) != 1 || list.Grants[0].Rule != "Bash(npm test:*)" || list.Files[protocol.GrantRepository] == "" {
		t.Fatalf("policy/list = %+v", list)
	}
	var rev protocol.PolicyRevokeResult
	c.Result("policy/revoke", map[string]any{"rule": "Bash(npm test:*)", "scope": "task", "taskId": task.ID}, &rev)
	c.Result("policy/list", map[string]any{"taskId": task.ID}, &list)
	if !rev.Revoked || len(list.Grants) != 0 {
		t.Fatalf("after revoke: %+v %+v", rev, list)
	}
	if m := c.Call("policy/revoke", map[string]any{"rule": "x", "scope": "task"}); m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || !strings.Contains(string(m.Error.Data), "taskId") {
		t.Fatalf("revoke without taskId = %+v", m.Error)
	}
}

// A 200 KB tool output that claude persisted is fetched whole, paged, by the
// reference its shortened result carries; a clipped summary likewise.
func TestFullTextsFetchedWhole(t *testing.T) {
	long := strings.Repeat("Summary line with a secret-free ✓ mark.\n", 1200) // ~50 KB, over the 30 KB clip
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "head -c 200000 /dev/zero | tr '\\0' a; echo END"}}}},
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "head -c 10000 /dev/zero | tr '\\0' b; echo END"}}}},
		fakeapi.Reply{Text: long},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{
		"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "big output", "description": "Print a lot."}, &task)
	n, _ := c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	var done protocol.TaskCompletedNotification
	json.Unmarshal(n.Params, &done)
	if !done.Result.Truncated || done.Result.SummaryRef == "" {
		t.Fatalf("summary not clipped with a reference: truncated %v ref %q (%d bytes)", done.Result.Truncated, done.Result.SummaryRef, len(done.Result.Summary))
	}
	if got := fetchText(t, c, task.ID, done.Result.SummaryRef, 16<<10); got != strings.TrimSpace(long) {
		t.Errorf("summary fetched: %d bytes, want %d", len(got), len(long))
	}
	// What claude gave the model: a preview and the path of the whole.
	var ref string
	for _, r := range api.MainRequests() {
		for _, tr := range r.ToolResults() {
			if x := texts.ToolResultRef(tr.Content); x != "" {
				ref = x
			}
		}
	}
	if ref == "" {
		t.Fatal("claude did not persist the tool output (no <persisted-output> result)")
	}
	whole := fetchText(t, c, task.ID, ref, 64<<10)
	if want := strings.Repeat("a", 200000) + "END\n"; whole != want {
		t.Fatalf("tool output fetched: %d bytes, want %d", len(whole), len(want))
	}
	// Both outputs are reachable from the task's steps: the one claude
	// saved by its file, the 10 KB one (shown as its first 2 KB) by the copy
	// familiar keeps.
	var got protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &got)
	var refs []string
	for _, s := range got.Steps {
		if s.Name == "Bash" {
			refs = append(refs, s.ResultRef)
		}
	}
	if len(refs) != 2 || refs[0] != ref || !strings.HasPrefix(refs[1], "clip/") {
		t.Fatalf("steps' result refs = %q (want %q and a clip)", refs, ref)
	}
	if mid := fetchText(t, c, task.ID, refs[1], 4096); !strings.HasPrefix(mid, strings.Repeat("b", 10000)) || !strings.Contains(mid, "END") {
		t.Errorf("10 KB output fetched: %d bytes", len(mid))
	}
	for _, bad := range []string{"../../etc/passwd", "tool-results/../../x.txt", "clip/zz"} {
		if m := c.Call("task/text", map[string]any{"id": task.ID, "ref": bad}); m.Error == nil || m.Error.Code != protocol.CodeInvalidParams {
			t.Errorf("task/text %q = %+v", bad, m.Error)
		}
	}
	// Replayed events carry when they were sent.
	var evs protocol.TaskEventsResult
	c.Result("task/events", map[string]any{"id": task.ID, "sinceSeq": 0, "limit": 5}, &evs)
	for _, e := range evs.Events {
		if e.At.IsZero() {
			t.Errorf("event %d (%s) has no time", e.Seq, e.Method)
		}
	}
}

func fetchText(t *testing.T, c *editor.Client, id, ref string, limit int) string {
	t.Helper()
	var b strings.Builder
	var off int64
	for pages := 0; ; pages++ {
		var page protocol.TaskTextResult
		c.Result("task/text", map[string]any{"id": id, "ref": ref, "offset": off, "limit": limit}, &page)
		b.WriteString(page.Data)
		if !page.Truncated {
			if pages == 0 {
				t.Errorf("%s came in one page of %d", ref, limit)
			}
			return b.String()
		}
		if page.NextOffset <= off {
			t.Fatalf("task/text made no progress at %d", off)
		}
		off = page.NextOffset
	}
}

// Two undos of a task keep both undone states, each at its own ref named by
// the task id; the task's branch is named by its id too.
func TestTwoUndosBothKeptAndBranchNamedByTaskID(t *testing.T) {
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "echo one > one.txt"}}}},
		fakeapi.Reply{Text: "Wrote one.txt. Should I also write two.txt?"},
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "echo two > two.txt"}}}},
		fakeapi.Reply{Text: "Wrote two.txt."},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{
		"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "two files", "description": "Write them."}, &task)
	n, next := c.WaitNotification(0, "question", editor.Method("task/question", task.ID, `"kind":"question"`))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(n.Params, &qn)
	c.Result("task/respond", map[string]any{"id": task.ID, "questionId": qn.Question.ID, "text": "yes"}, nil)
	c.WaitNotification(next, "completed", editor.Method("task/completed", task.ID))
	var done protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &done)
	if done.Worktree == nil || !strings.Contains(done.Worktree.Branch, task.ID) || !strings.Contains(done.Worktree.Path, task.ID) {
		t.Fatalf("worktree %+v does not name task %s", done.Worktree, task.ID)
	}
	if branches := gitOut(t, repo, "branch", "--list", "familiar/*"); !strings.Contains(branches, task.ID) {
		t.Errorf("git branch does not show the task id:\n%s", branches)
	}
	if done.UndoableUntil.IsZero() || !done.UndoableUntil.After(done.FinishedAt) {
		t.Errorf("undoableUntil = %v (finished %v)", done.UndoableUntil, done.FinishedAt)
	}
	head := gitOut(t, done.Worktree.Path, "rev-parse", "HEAD")
	from := len(c.Notifications())
	c.Result("task/undo", map[string]any{"id": task.ID}, nil)
	// What an undo cannot take back is a warning, which clients show (the
	// extension leaves info in its log).
	c.WaitNotification(from, "the undo's warning", editor.Method("server/message", `"level":"warning"`, "cannot undo pushes"))
	middle := gitOut(t, done.Worktree.Path, "rev-parse", "HEAD")
	c.Result("task/undo", map[string]any{"id": task.ID}, nil)
	refs := gitOut(t, repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/familiar/undo/")
	want := "refs/familiar/undo/" + task.ID + "/1 " + head + "\nrefs/familiar/undo/" + task.ID + "/2 " + middle
	if refs != want {
		t.Fatalf("undo refs:\n%s\nwant:\n%s", refs, want)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func mainOnly(rs []fakeapi.Request) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range rs {
		if !r.IsSideRequest() {
			out = append(out, r)
		}
	}
	return out
}

// An allow-always saved for the repository holds for the next task too, and
// the policy file it writes never makes the person's checkout dirty: the
// first task still merges.
func TestRepositoryGrantHoldsForOtherTasks(t *testing.T) {
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "npm test"}}}},
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Write", Input: map[string]string{"file_path": "first.txt", "content": "1\n"}}}},
		fakeapi.Reply{Text: "Tested and wrote first.txt."},
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "npm test -- --ci"}}}},
		fakeapi.Reply{Text: "Tested again."},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	// Writes are allowed by the settings' policy; npm test is asked.
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{
		"permissionPolicy": map[string]any{"default": "ask", "allow": []string{"Write"}}}}, nil)
	var first protocol.Task
	c.Result("task/create", map[string]any{"title": "first", "description": "Test."}, &first)
	n, next := c.WaitNotification(0, "permission", editor.Method("task/question", first.ID, `"kind":"permission"`))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(n.Params, &qn)
	c.Result("task/respond", map[string]any{"id": first.ID, "questionId": qn.Question.ID, "optionId": "allow_always", "grantScope": "repository"}, nil)
	c.WaitNotification(next, "first completed", editor.Method("task/completed", first.ID))
	if st := gitOut(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("the checkout is dirty after a repository grant:\n%s", st)
	}
	c.Result("task/merge", map[string]any{"id": first.ID}, nil)

	var second protocol.Task
	c.Result("task/create", map[string]any{"title": "second", "description": "Test again."}, &second)
	r, _ := c.WaitNotification(next, "decided by the repository grant", editor.Method("task/questionResolved", second.ID, `"decidedBy":"policy"`))
	if !strings.Contains(string(r.Params), `"optionId":"allow"`) {
		t.Fatalf("resolved = %s", r.Params)
	}
	c.WaitNotification(next, "second completed", editor.Method("task/completed", second.ID))
	var list protocol.PolicyListResult
	c.Result("policy/list", map[string]any{}, &list)
	found := false
	for _, g := range list.Grants {
		found = found || (g.Rule == "Bash(npm test:*)" && g.Scope == protocol.GrantRepository && g.TaskID == first.ID)
	}
	if !found {
		t.Fatalf("policy/list = %+v", list)
	}
	var rev protocol.PolicyRevokeResult
	c.Result("policy/revoke", map[string]any{"rule": "Bash(npm test:*)", "scope": "repository"}, &rev)
	if !rev.Revoked {
		t.Fatal("repository grant not revoked")
	}
}
