package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
)

// runPlan runs a tasks file whose tasks have needs as a plan: each task
// starts once the tasks it needs are merged and is merged through the
// merge queue as it finishes. Nobody can retry, edit or skip a step in a
// headless run, so a plan held by a failed step ends the run, with the
// report saying which step failed and which waited on it. Ctrl-C cancels
// the plan (what merged stays merged).
func runPlan(ctx context.Context, o Options, orch *orchestrator.Orchestrator, n *notes, rep Report) (Report, int) {
	s := o.File.Settings
	p, err := orch.PlanCreate(context.Background(), &protocol.PlanCreateParams{Steps: o.File.Plan, Verify: s.Verify, BaseRef: s.BaseRef, Run: true})
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeInvalidParams {
			fmt.Fprintf(o.Out, "%s: %s\n", o.File.Path, pe.Message)
			return rep, ExitBadInput
		}
		fmt.Fprintf(o.Out, "familiar run: the plan could not start: %v\n", err)
		return rep, ExitFailed
	}
	out := o.Out
	if o.JSON {
		out = o.Log
		if out == nil {
			out = io.Discard
		}
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	say("plan: %s into %s", count(len(p.Steps), "step"), p.BaseRef)
	seen := map[string]string{}
	tell := func(p *protocol.Plan) {
		for _, st := range p.Steps {
			words := string(st.State)
			if st.Why != "" && st.Why != "starting" {
				words += ": " + st.Why
			}
			if seen[st.ID] == words {
				continue
			}
			seen[st.ID] = words
			say("  %s (%s) %s", st.ID, st.Title, words)
		}
	}
	cancelled := false
	for {
		cur, err := orch.PlanGet(context.Background(), &protocol.PlanIDParams{ID: p.ID})
		if err != nil {
			fmt.Fprintf(o.Out, "familiar run: %v\n", err)
			return rep, ExitFailed
		}
		tell(cur)
		if cur.State.Ended() || cur.State == protocol.PlanHeld {
			p = cur
			break
		}
		select {
		case <-n.changed():
			n.take()
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				say("interrupted: cancelling the plan (what merged stays merged)")
				go orch.PlanCancel(context.Background(), &protocol.PlanIDParams{ID: p.ID})
			}
			ctx = context.Background()
		case <-o.Force:
			say("forced: killing the agents")
			orch.Kill()
			o.Force = nil
		}
	}
	if p.State == protocol.PlanHeld {
		say("the plan is held, and nobody can retry, edit or skip a step in a headless run: %s", p.Why)
	}
	rep.Plan = p
	rep.OK = p.State == protocol.PlanDone
	for i, st := range p.Steps {
		for _, id := range st.TaskIDs {
			if tr, _, ok := taskReport(orch, id, o.File.Lines[i]); ok {
				rep.Tasks = append(rep.Tasks, tr)
			}
		}
	}
	return finish(o, orch, rep)
}

// printPlan says where each step of the plan ended and why.
func printPlan(w io.Writer, p *protocol.Plan) {
	fmt.Fprintf(w, "\nplan into %s", p.BaseRef)
	if p.Verify != "" {
		fmt.Fprintf(w, " (verify: %s)", p.Verify)
	}
	fmt.Fprintf(w, ": %s", p.State)
	if p.Why != "" {
		fmt.Fprintf(w, ", %s", oneLine(p.Why, 300))
	}
	fmt.Fprintln(w)
	for _, s := range p.Steps {
		line := fmt.Sprintf("  %-9s %s (%s)", s.State, s.Title, s.ID)
		if len(s.Needs) > 0 {
			line += ", needs " + strings.Join(s.Needs, ", ")
		}
		if s.Attempts > 1 {
			line += fmt.Sprintf(", %d attempts", s.Attempts)
		}
		if s.Why != "" && s.State != protocol.StepMerged {
			line += ": " + oneLine(s.Why, 300)
		}
		fmt.Fprintln(w, line)
	}
	t := p.Totals
	fmt.Fprintf(w, "  %s wall, %s of agents' work, %d tokens, $%.4f\n",
		(time.Duration(t.WallMs) * time.Millisecond).Round(100*time.Millisecond),
		(time.Duration(t.WorkMs) * time.Millisecond).Round(100*time.Millisecond), t.Tokens, t.CostUSD)
}
