package orchestrator

import (
	"time"

	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/mask"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/texts"
)

// transcriptEntry is an agent's transcript entry (the protocol's already)
// as clients get it: masked like everything else familiar sends, an edit's
// texts and a call's input clipped, a tool's whole result kept behind a
// reference. The agent's entry is not changed.
func (o *Orchestrator) transcriptEntry(id string, e *transcript.Entry) protocol.TranscriptEntry {
	out := e.TranscriptEntry
	out.At = out.At.UTC()
	out.Text = o.maskString(out.Text)
	if e.ToolCall != nil {
		tc := *e.ToolCall
		tc.Title, tc.Input, tc.Result = o.maskString(tc.Title), o.mask(tc.Input), o.maskString(tc.Result)
		if len(tc.Input) > 0 {
			tc.Input, _ = clipJSON(tc.Input)
		}
		tc.ResultRef = o.resultRef(id, e.ToolCall.Result, e.FullResult)
		tc.Diffs = nil
		for _, d := range e.ToolCall.Diffs {
			oldText, _ := clip(o.maskString(d.OldText))
			newText, _ := clip(o.maskString(d.NewText))
			tc.Diffs = append(tc.Diffs, protocol.FileDiff{Path: d.Path, OldText: oldText, NewText: newText})
		}
		tc.StartedAt = tc.StartedAt.UTC()
		out.ToolCall = &tc
	}
	out.Plan = nil
	for _, it := range e.Plan {
		out.Plan = append(out.Plan, protocol.PlanItem{Content: o.maskString(it.Content), Status: it.Status})
	}
	return out
}

// resultRef is where the whole result of a tool call can be fetched when its
// step shows only the start (result): the file claude saved an output over
// ~30 KB in, else a copy familiar keeps of full.
func (o *Orchestrator) resultRef(id, result, full string) string {
	if ref := texts.ToolResultRef(result); ref != "" {
		return ref
	}
	if full == "" {
		return ""
	}
	_, ref, err := o.texts(id).Clip(full, transcript.ResultExcerpt)
	if err != nil {
		o.logger.Warn("keep tool result", "task", id, "err", err)
	}
	return ref
}

// streamedText masks a text or thinking block that streams in chunks
// (stream driver): a secret split across two deltas is still one secret.
// Its mask.Stream holds back the last word, which may be the start of one,
// until the next chunk or the block's end.
type streamedText struct {
	gen       int
	kind      transcript.Kind
	messageID string
	at        time.Time
	s         *mask.Stream
}

// transcript turns an agent's transcript entry into the entries to
// publish: a whole one as transcriptEntry does; a streamed chunk masked in
// its block's stream (perhaps nothing yet, perhaps with the end of the
// block before it).
func (a *actor) transcript(gen int, e *transcript.Entry) []protocol.TranscriptEntry {
	a.streamMu.Lock()
	defer a.streamMu.Unlock()
	var out []protocol.TranscriptEntry
	if st := a.streamed; st != nil && (st.gen != gen || !e.Delta || st.kind != e.Kind || st.messageID != e.MessageID) {
		// Its block is over without its last chunk (interrupted, or its
		// line was not read): what it held goes first.
		a.streamed = nil
		if rest := st.s.Flush(true); len(rest) > 0 && st.gen == gen {
			out = append(out, protocol.TranscriptEntry{Kind: st.kind, At: st.at, MessageID: st.messageID, Text: string(rest)})
		}
	}
	if !e.Delta {
		return append(out, a.o.transcriptEntry(a.id, e))
	}
	st := a.streamed
	if st == nil {
		st = &streamedText{gen: gen, kind: e.Kind, messageID: e.MessageID, s: a.o.masker.NewStream(0)}
		a.streamed = st
	}
	st.at = e.At.UTC()
	text := string(st.s.Write([]byte(e.Text)))
	if e.Final {
		text += string(st.s.Flush(true))
		a.streamed = nil
	}
	if text == "" {
		return out
	}
	return append(out, protocol.TranscriptEntry{Kind: e.Kind, At: st.at, MessageID: e.MessageID, Text: text})
}
