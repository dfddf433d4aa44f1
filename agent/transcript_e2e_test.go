package agent_test

import (
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/transcript"
)

// Both drivers report the same transcript for the same turn: the prompt, each
// tool call from pending through running (its permission granted) to
// completed or failed, the text, and usage equal to what the fake API sent —
// all before the turn is reported ended.
func TestTranscript(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		prompt := "work\n" +
			"@@TOOL Bash {\"command\":\"echo hi > a.txt\",\"description\":\"make a\"}\n" +
			"@@TOOL Write {\"file_path\":\"b.txt\",\"content\":\"one\\n\"}\n" +
			"@@TOOL Bash {\"command\":\"ls /nonexistent-xyz\",\"description\":\"fail\"}\n" +
			"@@TEXT All done here."
		h := start(t, driver, prompt)
		next := 0
		var end agent.Event
		for {
			ev, n := h.rec.wait(t, next, "question or turn end", func(ev agent.Event) bool {
				return turnEnded(ev) || ev.Kind == agent.EventQuestion
			})
			next = n
			if ev.Kind == agent.EventTurnEnded {
				end = ev
				break
			}
			if ev.Question.ToolUseID == "" {
				t.Errorf("permission for %s has no tool use id", ev.Question.Tool)
			}
			if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
				t.Fatal(err)
			}
		}
		var seq []string
		var usage *transcript.Usage
		var text string
		calls := map[string][]string{}
		var order []string
		for i, ev := range h.rec.all() {
			if ev.Kind != agent.EventTranscript {
				continue
			}
			if i >= next {
				t.Errorf("transcript entry after the turn ended: %+v", ev.Transcript)
			}
			e := ev.Transcript
			switch e.Kind {
			case transcript.KindToolCall:
				if calls[e.ToolCall.ID] == nil {
					order = append(order, e.ToolCall.ID)
					seq = append(seq, "tool_call:"+e.ToolCall.Name)
				}
				calls[e.ToolCall.ID] = append(calls[e.ToolCall.ID], e.ToolCall.Status)
			case transcript.KindUsage:
				usage = e.Usage
			case transcript.KindText:
				text += e.Text
				if seq[len(seq)-1] != "text" { // streamed: in chunks
					seq = append(seq, "text")
				}
			case transcript.KindPrompt:
				seq = append(seq, "prompt")
			}
		}
		if got, want := strings.Join(seq, " "), "prompt tool_call:Bash tool_call:Write tool_call:Bash text"; got != want {
			t.Errorf("sequence = %s, want %s", got, want)
		}
		wantStatus := []string{"pending running completed", "pending running completed", "pending running failed"}
		for i, id := range order {
			if i < len(wantStatus) && strings.Join(calls[id], " ") != wantStatus[i] {
				t.Errorf("call %d statuses = %v, want %s", i, calls[id], wantStatus[i])
			}
		}
		if text != "All done here." {
			t.Errorf("text = %q", text)
		}
		reqs := len(h.api.MainRequests())
		if usage == nil || usage.Total == nil {
			t.Fatal("no usage")
		}
		// The fake API answers every request with 100 input and 20 output tokens.
		if usage.Total.Responses != reqs || usage.Total.InputTokens != int64(100*reqs) || usage.Total.OutputTokens != int64(20*reqs) {
			t.Errorf("usage total = %+v, want %d responses of 100/20", usage.Total, reqs)
		}
		t.Logf("usage: %+v; turn cost from the CLI: %v", *usage.Total, end.Turn.CostUSD)
		if end.Turn.Usage == nil || end.Turn.Usage.Responses != reqs {
			t.Errorf("turn usage = %+v, want %d responses", end.Turn.Usage, reqs)
		}
	})
}

// The stream driver reports the assistant's text and thinking as they
// stream, in several chunks (the fake API sends each in three deltas, 150 ms
// apart); the PTY driver reads them from the session file, a block at a
// time. Either way the chunks add up to the text, once.
func TestTranscriptTextChunks(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		const thinking, answer = "Weighing the options here.", "The answer is forty-two, plainly."
		h := start(t, driver, "think\n@@PACE 150ms\n@@THINK "+thinking+"\n@@TEXT "+answer)
		_, next := h.rec.wait(t, 0, "turn end", turnEnded)
		var texts, thoughts []string
		for _, ev := range h.rec.all()[:next] {
			if ev.Kind != agent.EventTranscript {
				continue
			}
			switch e := ev.Transcript; e.Kind {
			case transcript.KindText:
				texts = append(texts, e.Text)
			case transcript.KindThinking:
				thoughts = append(thoughts, e.Text)
			}
		}
		t.Logf("%s: text %q, thinking %q", driver, texts, thoughts)
		if strings.Join(texts, "") != answer {
			t.Errorf("text chunks %q add up to something else than %q", texts, answer)
		}
		if strings.Join(thoughts, "") != thinking {
			t.Errorf("thinking chunks %q add up to something else than %q", thoughts, thinking)
		}
		if driver == agent.DriverStream && (len(texts) < 2 || len(thoughts) < 2) {
			t.Errorf("stream driver: text in %d chunks, thinking in %d; want them as they stream", len(texts), len(thoughts))
		}
	})
}

// An interrupted turn is over, and the next prompt goes on in the session
// (ACP's session/cancel, then the next session/prompt).
func TestPromptAfterInterrupt(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "make\n@@TOOL Bash {\"command\":\"touch never.txt\"}\n@@TEXT Never.")
		_, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if driver == agent.DriverPTY {
			waitScreen(t, h.sess, "Do you want to proceed?")
		}
		if err := h.sess.Interrupt(); err != nil {
			t.Fatal(err)
		}
		ev, next := h.rec.wait(t, next, "the interrupted turn's end", func(ev agent.Event) bool {
			return turnEnded(ev) || (ev.Kind == agent.EventQuestion && ev.Question.Kind == agent.KindQuestion)
		})
		// The permission the interrupt cut short is withdrawn, not left
		// waiting for an answer nobody reads (stream: the CLI's
		// control_cancel_request).
		h.rec.wait(t, 0, "the permission withdrawn", isResolved("agent"))
		if ev.Kind == agent.EventQuestion {
			if err := h.sess.Answer(ev.Question.ID, agent.Answer{Text: "go on\n@@TEXT Going on."}); err != nil {
				t.Fatal(err)
			}
		} else if err := h.sess.SendPrompt("go on\n@@TEXT Going on."); err != nil {
			t.Fatal(err)
		}
		ev, _ = h.rec.wait(t, next, "the next turn's end", func(ev agent.Event) bool {
			return turnEnded(ev) && ev.Turn.LastMessage == "Going on."
		})
		if h.exists("never.txt") {
			t.Error("the interrupted command ran")
		}
	})
}
