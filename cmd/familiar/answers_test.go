package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
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
