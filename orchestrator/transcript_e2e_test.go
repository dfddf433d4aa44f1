package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// A finished task shows its tool calls as steps on task/get, reports usage
// equal to what the fake API's usage fields add up to, a cost, and its
// transcript went out as task/transcript notifications with the tool call's
// id on the permission question.
func TestTranscriptStepsAndUsage(t *testing.T) {
	e := open(t, nil, nil)
	a := finish(t, e, "steps", "steps.txt")
	if len(a.Steps) != 1 || a.Steps[0].Name != "Bash" || a.Steps[0].Status != "completed" || a.Steps[0].Kind != "execute" {
		t.Fatalf("steps = %+v", a.Steps)
	}
	reqs := int64(len(e.api.MainRequests()))
	u := a.Usage
	if u == nil || u.InputTokens != 100*reqs || u.OutputTokens != 20*reqs || int64(u.Responses) != reqs || len(u.Turns) != 1 {
		t.Fatalf("usage = %+v, want %d responses of 100 in / 20 out", u, reqs)
	}
	if a.Result == nil || a.Result.CostUSD == nil || *a.Result.CostUSD <= 0 {
		t.Errorf("result cost = %+v", a.Result)
	}
	step := a.Steps[0].ID
	e.notes.wait(t, "the question names the tool call", is(protocol.NotifyTaskQuestion, a.ID, `"toolUseId":"`+step+`"`))
	e.notes.wait(t, "the tool call in the transcript", is(protocol.NotifyTaskTranscript, a.ID, `"id":"`+step+`"`, `"status":"completed"`))
}

// Under the stream driver the assistant's text and thinking go out as
// task/transcript chunks as they stream (the fake API sends each in three
// deltas, 150 ms apart); the chunks add up to the text.
func TestTranscriptTextStreams(t *testing.T) {
	e := open(t, nil, nil)
	const thinking, answer = "Weighing the options here.", "The answer is forty-two, plainly."
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "stream",
		Description: "think\n@@PACE 150ms\n@@THINK " + thinking + "\n@@TEXT " + answer, Driver: protocol.DriverStream})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the turn done", is(protocol.NotifyTaskCompleted, `"id":"`+task.ID+`"`))
	chunks := map[string][]string{}
	for _, n := range e.notes.all() {
		if !is(protocol.NotifyTaskTranscript, `"id":"`+task.ID+`"`)(n) {
			continue
		}
		var p protocol.TaskTranscriptNotification
		if err := json.Unmarshal(n.params, &p); err != nil {
			t.Fatal(err)
		}
		if k := p.Entry.Kind; k == "text" || k == "thinking" {
			if p.Entry.MessageID == "" {
				t.Errorf("a %s chunk without its messageId", k)
			}
			chunks[k] = append(chunks[k], p.Entry.Text)
		}
	}
	t.Logf("chunks: %q", chunks)
	if got := chunks["text"]; len(got) < 2 || strings.Join(got, "") != answer {
		t.Errorf("text chunks %q: want several adding up to %q", got, answer)
	}
	if got := chunks["thinking"]; len(got) < 2 || strings.Join(got, "") != thinking {
		t.Errorf("thinking chunks %q: want several adding up to %q", got, thinking)
	}
}

// A secret the model streams in pieces is masked whole: the fake API cuts
// the text into three deltas, so the key is split between two of them, and
// neither the transcript nor the raw output may carry a piece of it.
func TestTranscriptStreamedSecretMasked(t *testing.T) {
	e := open(t, nil, nil)
	key := "sk-ant-api03-" + strings.Repeat("Zq7Xw2", 12) + "AA"
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "secret",
		Description: "leak\n@@PACE 50ms\n@@TEXT Here is the key " + key + " for you.", Driver: protocol.DriverStream})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the turn done", is(protocol.NotifyTaskCompleted, `"id":"`+task.ID+`"`))
	var text strings.Builder
	for _, n := range e.notes.all() {
		if n.method == protocol.NotifyTaskUpdated {
			continue // the task's description is the person's prompt, as written
		}
		if strings.Contains(string(n.params), "Zq7Xw2") {
			t.Errorf("%s carries a piece of the key: %s", n.method, n.params)
		}
		var p protocol.TaskTranscriptNotification
		if is(protocol.NotifyTaskTranscript, `"id":"`+task.ID+`"`, `"kind":"text"`)(n) && json.Unmarshal(n.params, &p) == nil {
			text.WriteString(p.Entry.Text)
		}
	}
	out, err := e.o.TaskOutput(context.Background(), &protocol.TaskOutputParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Data, "Zq7Xw2") || !strings.Contains(out.Data, "sk-ant-a") {
		t.Errorf("the output log shows the key or not its masked form:\n%s", out.Data)
	}
	if got := text.String(); !strings.HasPrefix(got, "Here is the key sk-ant-") || !strings.Contains(got, "[masked") || !strings.HasSuffix(got, " for you.") {
		t.Errorf("streamed text = %q", got)
	}
}
