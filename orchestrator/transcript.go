package orchestrator

import (
	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/protocol"
)

// transcriptEntry turns an agent's transcript entry into its protocol form,
// masked like everything else familiar sends.
func (o *Orchestrator) transcriptEntry(e *transcript.Entry) protocol.TranscriptEntry {
	out := protocol.TranscriptEntry{Kind: string(e.Kind), At: e.At.UTC(), MessageID: e.MessageID, Text: o.maskString(e.Text)}
	if tc := e.Tool; tc != nil {
		p := &protocol.ToolCall{ID: tc.ID, Name: tc.Name, Kind: tc.Kind, Title: o.maskString(tc.Title), Input: o.mask(tc.Input),
			Files: tc.Files, Status: tc.Status, Result: o.maskString(tc.Result), DurationMs: tc.DurationMs,
			StartedAt: tc.StartedAt.UTC(), EndedAt: tc.EndedAt}
		if len(p.Input) > 0 {
			p.Input, _ = clipJSON(p.Input)
		}
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
