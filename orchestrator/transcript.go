package orchestrator

import (
	"time"

	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/mask"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/texts"
)

// transcriptEntry turns an agent's transcript entry into its protocol form,
// masked like everything else familiar sends.
func (o *Orchestrator) transcriptEntry(id string, e *transcript.Entry) protocol.TranscriptEntry {
	out := protocol.TranscriptEntry{Kind: string(e.Kind), At: e.At.UTC(), MessageID: e.MessageID, Text: o.maskString(e.Text)}
	if tc := e.Tool; tc != nil {
		p := &protocol.ToolCall{ID: tc.ID, Name: tc.Name, Kind: tc.Kind, Title: o.maskString(tc.Title), Input: o.mask(tc.Input),
			Files: tc.Files, Status: tc.Status, Result: o.maskString(tc.Result), DurationMs: tc.DurationMs,
			StartedAt: tc.StartedAt.UTC(), EndedAt: tc.EndedAt}
		if len(p.Input) > 0 {
			p.Input, _ = clipJSON(p.Input)
		}
		p.ResultRef = o.resultRef(id, tc)
		for _, d := range tc.Diffs {
			oldText, _ := clip(o.maskString(d.OldText))
			newText, _ := clip(o.maskString(d.NewText))
			p.Diffs = append(p.Diffs, protocol.FileDiff{Path: d.Path, OldText: oldText, NewText: newText})
		}
		out.ToolCall = p
	}
	for _, it := range e.Plan {
		out.Plan = append(out.Plan, protocol.PlanItem{Content: o.maskString(it.Content), Status: it.Status})
	}
	if u := e.Usage; u != nil {
		pu := &protocol.Usage{Model: u.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
		if t := u.Total; t != nil {
			pu.Total = &protocol.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheReadTokens: t.CacheReadTokens,
				CacheWriteTokens: t.CacheWriteTokens, CostUSD: t.CostUSD, Responses: t.Responses}
		}
		out.Usage = pu
	}
	return out
}

// resultRef is where the whole result of a tool call can be fetched when its
// step shows only the start: the file claude saved an output over ~30 KB in,
// else a copy familiar keeps.
func (o *Orchestrator) resultRef(id string, tc *transcript.ToolCall) string {
	if ref := texts.ToolResultRef(tc.Result); ref != "" {
		return ref
	}
	if tc.FullResult == "" {
		return ""
	}
	_, ref, err := o.texts(id).Clip(tc.FullResult, transcript.ResultExcerpt)
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
			out = append(out, protocol.TranscriptEntry{Kind: string(st.kind), At: st.at, MessageID: st.messageID, Text: string(rest)})
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
	return append(out, protocol.TranscriptEntry{Kind: string(e.Kind), At: st.at, MessageID: e.MessageID, Text: text})
}
