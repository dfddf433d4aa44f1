package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// methodLog records what each method answered, as "ok" or the error code.
type methodLog struct {
	t       *testing.T
	c       *editor.Client
	outcome map[string]string // JSON-RPC method → "ok" or "error <code>"
}

// call calls method, fails the test on -32601 (the method is not served on
// this path) and -32602 (the test sent bad params), and records the outcome.
func (l *methodLog) call(method string, params, out any) *editor.RPCError {
	l.t.Helper()
	m := l.c.Call(method, params)
	got := "ok"
	if m.Error != nil {
		got = fmt.Sprintf("error %d", m.Error.Code)
		if m.Error.Code == protocol.CodeMethodNotFound || m.Error.Code == protocol.CodeInvalidParams {
			l.t.Errorf("%s answered %v", method, m.Error)
		}
	} else if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			l.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
	if prev, ok := l.outcome[method]; ok && prev != got {
		got = prev + ", " + got
	}
	l.outcome[method] = got
	return m.Error
}

// ok is call for a method that must succeed. A -32601 (already reported)
// lets the script go on, so one run names every method missing on a path.
func (l *methodLog) ok(method string, params, out any) {
	l.t.Helper()
	if e := l.call(method, params, out); e != nil && e.Code != protocol.CodeMethodNotFound {
		l.t.Fatalf("%s: %v", method, e)
	}
}

// Every method of PROTOCOL.md answers through the background familiar (the
// path editors take) as it does in-process (--no-daemon): the same script
// runs both ways, no method answers -32601 either way, and each method's
// outcome is the same in both. A method of protocol.Server the script does
// not call fails the test, so a new method gets covered here too.
//
// Before the daemon's service carried every method, task/markDone,
// task/text, policy/list and policy/revoke answered -32601 through it.
func TestEveryMethodBothWays(t *testing.T) {
	var mu sync.Mutex
	outcomes := map[serveMode]map[string]string{}
	bothModes(t, func(t *testing.T, mode serveMode) {
		log := everyMethod(t, mode)
		mu.Lock()
		outcomes[mode] = log.outcome
		mu.Unlock()
	})
	if t.Failed() || len(outcomes) < 2 { // failed, or skipped for want of claude
		return
	}
	// server/stop is the background familiar's: in-process there is
	// nothing to stop on purpose.
	want := map[serveMode]string{viaDaemon: "ok", noDaemon: fmt.Sprintf("error %d", protocol.CodeFailedPrecondition)}
	for mode, w := range want {
		if got := outcomes[mode][protocol.MethodServerStop]; got != w {
			t.Errorf("%s: server/stop = %s, want %s", mode, got, w)
		}
		delete(outcomes[mode], protocol.MethodServerStop)
	}
	var called []string
	for method, d := range outcomes[viaDaemon] {
		called = append(called, method)
		if n := outcomes[noDaemon][method]; n != d {
			t.Errorf("%s: %s through the background familiar, %s in-process", method, d, n)
		}
	}
	called = append(called, protocol.MethodServerStop)
	iface := reflect.TypeFor[protocol.Server]()
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		if !slices.ContainsFunc(called, func(m string) bool { return goMethodName(m) == name }) {
			t.Errorf("protocol.Server.%s is not called by this test", name)
		}
	}
}

// goMethodName is the protocol.Server method of a JSON-RPC method name:
// "task/markDone" → TaskMarkDone.
func goMethodName(rpcMethod string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(rpcMethod, "/") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// everyMethod is the script of TestEveryMethodBothWays: two tasks through
// one slot, so which task waits where does not depend on timing.
func everyMethod(t *testing.T, mode serveMode) *methodLog {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliarIn(t, mode, repo, api)
	l := &methodLog{t: t, c: f.client, outcome: map[string]string{}}
	c := f.client

	var init protocol.InitializeResult
	l.ok("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{"maxConcurrent": 1}}, &init)
	l.ok("settings/update", map[string]any{"settings": map[string]any{"approvalTimeoutSec": 600}}, nil)
	l.ok("profiles/list", map[string]any{}, nil)
	// A claude prepared for a task not made yet (issue 40), while the one
	// slot is free, let go unused.
	var prepared protocol.TaskPrepareResult
	l.ok("task/prepare", map[string]any{"driver": "stream"}, &prepared)
	if prepared.ID == "" {
		t.Errorf("%s: task/prepare with the slot free prepared nothing: %s", mode, prepared.Reason)
	}
	l.ok("task/release", map[string]any{"id": prepared.ID}, nil)
	l.ok("skills/list", map[string]any{}, nil)
	l.call("skills/get", map[string]any{"name": "no-such-skill"}, nil)
	l.ok("mcp/presets", map[string]any{}, nil)
	l.ok("mcp/check", map[string]any{"servers": map[string]any{}}, nil)
	l.ok("server/stats", map[string]any{}, nil)

	// a holds the only slot, waiting on a permission; b waits in the queue.
	var a, b protocol.Task
	l.ok("task/create", map[string]any{"title": "make a", "description": "go\n@@TOOL Bash {\"command\":\"touch a.txt\",\"description\":\"make it\"}\n@@TEXT Made a.txt."}, &a)
	q, _ := c.WaitNotification(0, "a's permission", editor.Method("task/question", a.ID))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(q.Params, &qn)
	l.ok("task/create", map[string]any{"title": "ask b", "description": "go\n@@TEXT I changed nothing yet. Should I also update the docs?"}, &b)
	l.ok("task/reorder", map[string]any{"id": b.ID, "priority": 5}, nil)
	l.ok("task/pause", map[string]any{"id": b.ID}, nil)
	l.call("task/setMode", map[string]any{"id": b.ID, "mode": "architect"}, nil)
	l.ok("task/resume", map[string]any{"id": b.ID}, nil)
	l.ok("task/get", map[string]any{"id": a.ID}, nil)
	l.ok("task/list", map[string]any{}, nil)
	l.ok("task/screen", map[string]any{"id": a.ID}, nil)
	l.ok("task/output", map[string]any{"id": a.ID}, nil)
	l.ok("task/resize", map[string]any{"id": a.ID, "cols": 100, "rows": 30}, nil)

	// Allow always: a grant of the task, listed and revoked.
	l.ok("task/respond", map[string]any{"id": a.ID, "questionId": qn.Question.ID, "optionId": "allow_always"}, nil)
	var grants protocol.PolicyListResult
	l.ok("policy/list", map[string]any{"taskId": a.ID}, &grants)
	var rule string
	for _, g := range grants.Grants {
		if g.Scope == protocol.GrantTask && g.TaskID == a.ID {
			rule = g.Rule
		}
	}
	if rule == "" {
		t.Errorf("%s: policy/list after allow always = %+v", mode, grants)
		rule = "Bash(touch a.txt)"
	}
	var revoked protocol.PolicyRevokeResult
	l.ok("policy/revoke", map[string]any{"rule": rule, "scope": "task", "taskId": a.ID}, &revoked)
	if !revoked.Revoked {
		t.Errorf("%s: policy/revoke = %+v", mode, revoked)
	}
	c.WaitNotification(0, "a completed", editor.Method("task/completed", a.ID))
	l.ok("task/diff", map[string]any{"id": a.ID}, nil)
	l.ok("task/events", map[string]any{"id": a.ID, "sinceSeq": 0}, nil)
	l.call("task/text", map[string]any{"id": a.ID, "ref": "clip/0123456789abcdef01234567"}, nil)
	l.ok("task/merge", map[string]any{"id": a.ID}, nil)
	l.ok("task/undo", map[string]any{"id": a.ID}, nil)
	// The merge queue takes a in again, checked by a verify command, and
	// queue/undo takes the run back.
	before := len(c.Notifications())
	var mq protocol.Queue
	l.ok("queue/merge", map[string]any{"ids": []string{a.ID}, "verify": "test -f a.txt"}, &mq)
	c.WaitNotification(before, "the queue done", editor.Method("queue/updated", mq.ID, `"state":"done"`, `"state":"merged"`))
	var qs protocol.QueueStatusResult
	l.ok("queue/status", map[string]any{}, &qs)
	if qs.Queue == nil || qs.Queue.Items[0].State != protocol.QueueItemMerged {
		t.Errorf("%s: queue/status = %+v", mode, qs.Queue)
	}
	l.call("queue/cancel", map[string]any{}, nil) // none runs: -32003
	l.ok("queue/undo", map[string]any{}, nil)
	l.ok("task/remove", map[string]any{"id": a.ID, "force": true}, nil)
	// a, its worktree removed, goes to the archive: task/list leaves it out
	// unless asked (issue 26).
	var archived protocol.TaskArchiveResult
	l.ok("task/archive", map[string]any{"ids": []string{a.ID}}, &archived)
	var only protocol.TaskListResult
	l.ok("task/list", map[string]any{"archived": "only"}, &only)
	if len(archived.IDs) != 1 || len(only.Tasks) != 1 || only.Tasks[0].ID != a.ID || only.Tasks[0].ArchivedAt.IsZero() {
		t.Errorf("%s: archived %v, then the archive lists %+v", mode, archived.IDs, only.Tasks)
	}

	// b ran once a's slot was free, and ended its turn asking in prose.
	c.WaitNotification(0, "b's question", editor.Method("task/question", b.ID, `"kind":"question"`))
	l.ok("task/markDone", map[string]any{"id": b.ID}, nil)
	c.WaitNotification(0, "b completed", editor.Method("task/completed", b.ID))
	// A follow-up the model takes a minute over, interrupted.
	from := len(c.Notifications())
	requests := len(api.MainRequests())
	l.ok("task/send", map[string]any{"id": b.ID, "text": "@@DELAY 60s\n@@TEXT Updated the docs."}, nil)
	c.WaitNotification(from, "b running again", editor.Method("task/updated", b.ID, `"status":"running"`))
	if _, ok := api.WaitFor(func(reqs []fakeapi.Request) bool { return len(mainOnly(reqs)) > requests }, 60*time.Second); !ok {
		t.Fatalf("%s: claude sent no request for the follow-up", mode)
	}
	// Typing reaches the agent while it works (its turn's end would let the
	// agent go, so not after the interrupt).
	l.ok("task/input", map[string]any{"id": b.ID, "data": "x"}, nil)
	l.ok("task/interrupt", map[string]any{"id": b.ID}, nil)
	l.ok("task/cancel", map[string]any{"id": b.ID}, nil)
	var retry protocol.Task
	l.ok("task/retry", map[string]any{"id": b.ID}, &retry)
	l.ok("task/cancel", map[string]any{"id": retry.ID}, nil)

	// A plan of one step whose agent changes nothing: written, read,
	// edited, skipped and taken back, run (its step fails: it changed
	// nothing, so the plan is held), cancelled, undone (nothing merged).
	step := map[string]any{"id": "s", "title": "A step", "description": "look\n@@TEXT Nothing to do."}
	var plan protocol.Plan
	l.ok("plan/create", map[string]any{"steps": []any{step}, "verify": ""}, &plan)
	l.ok("plan/get", map[string]any{"id": plan.ID}, nil)
	l.ok("plan/list", map[string]any{}, nil)
	step["title"] = "A step, edited"
	l.ok("plan/update", map[string]any{"id": plan.ID, "steps": []any{step}}, nil)
	l.ok("plan/skip", map[string]any{"id": plan.ID, "step": "s"}, nil)
	l.ok("plan/retry", map[string]any{"id": plan.ID, "step": "s"}, nil)
	from = len(c.Notifications())
	l.ok("plan/run", map[string]any{"id": plan.ID}, nil)
	c.WaitNotification(from, "the plan held", editor.Method("plan/updated", plan.ID, `"state":"held"`))
	l.ok("plan/cancel", map[string]any{"id": plan.ID}, nil)
	l.ok("plan/undo", map[string]any{"id": plan.ID}, nil)

	l.ok("audit/list", map[string]any{}, nil)
	// With this window connected, the background familiar says it is busy
	// rather than stop.
	var stop protocol.ServerStopResult
	if l.call("server/stop", map[string]any{"ifIdle": true}, &stop) == nil && (stop.Stopping || stop.Busy == "") {
		t.Errorf("%s: server/stop {ifIdle} with a window connected = %+v", mode, stop)
	}
	l.ok("shutdown", nil, nil)
	c.Notify("exit", nil)
	return l
}
