package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
)

// maxIDLen bounds a step's id: it is shown in lists and named in needs.
const maxIDLen = 40

// Check says everything wrong with how steps hang together, each problem
// naming its step and field: ids missing, malformed or used twice; steps
// with no title or no description; needs that name no step or the step
// itself; a cycle of needs (named step by step). No problems: the steps can
// run.
func Check(steps []protocol.PlanStepSpec) []protocol.PlanProblem {
	var probs []protocol.PlanProblem
	add := func(i int, field, format string, args ...any) {
		id := ""
		if i >= 0 {
			id = steps[i].ID
		}
		probs = append(probs, protocol.PlanProblem{Step: id, Index: i, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(steps) == 0 {
		add(-1, "steps", "the plan has no steps")
		return probs
	}
	if len(steps) > protocol.MaxPlanSteps {
		add(-1, "steps", "a plan has at most %d steps, not %d", protocol.MaxPlanSteps, len(steps))
	}
	index := map[string]int{}
	for i, s := range steps {
		switch {
		case s.ID == "":
			add(i, "id", "step %d has no id", i+1)
		case !validID(s.ID):
			add(i, "id", "step %d's id %q must be letters, digits, '-', '_' or '.', at most %d characters", i+1, s.ID, maxIDLen)
		default:
			if j, ok := index[s.ID]; ok {
				add(i, "id", "steps %d and %d are both called %q", j+1, i+1, s.ID)
			} else {
				index[s.ID] = i
			}
		}
		if strings.TrimSpace(s.Title) == "" {
			add(i, "title", "step %s has no title", name(s, i))
		}
		if strings.TrimSpace(s.Description) == "" {
			add(i, "description", "step %s is empty: it says nothing of what to do", name(s, i))
		}
		if s.Mode != "" && !s.Mode.Valid() {
			add(i, "mode", "step %s's mode %q is not one of executor, architect, auditor", name(s, i), s.Mode)
		}
	}
	for i, s := range steps {
		seen := map[string]bool{}
		for _, n := range s.Needs {
			switch {
			case n == s.ID:
				add(i, "needs", "step %s needs itself", name(s, i))
			case seen[n]:
				add(i, "needs", "step %s needs %q twice", name(s, i), n)
			default:
				if _, ok := index[n]; !ok {
					add(i, "needs", "step %s needs %q, which is not a step of this plan", name(s, i), n)
				}
			}
			seen[n] = true
		}
	}
	if cyc := cycle(steps, index); len(cyc) > 0 {
		i := index[cyc[0]]
		add(i, "needs", "the steps need each other in a circle, so none of them could start: %s", strings.Join(append(cyc, cyc[0]), " → "))
	}
	return probs
}

// name is how a problem names a step: its id, else its place.
func name(s protocol.PlanStepSpec, i int) string {
	if s.ID != "" {
		return fmt.Sprintf("%q", s.ID)
	}
	return fmt.Sprintf("%d", i+1)
}

func validID(id string) bool {
	if len(id) > maxIDLen {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// cycle returns the steps of one cycle of needs, in the order each needs
// the next, or nil. Needs that name no step are left to Check's own words.
func cycle(steps []protocol.PlanStepSpec, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int, len(steps))
	var path []string
	var found []string
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = onPath
		path = append(path, steps[i].ID)
		for _, n := range steps[i].Needs {
			j, ok := index[n]
			if !ok || n == steps[i].ID {
				continue
			}
			switch state[j] {
			case onPath:
				at := slices.Index(path, n)
				found = slices.Clone(path[at:])
				return true
			case unseen:
				if visit(j) {
					return true
				}
			}
		}
		state[i] = finished
		path = path[:len(path)-1]
		return false
	}
	for i := range steps {
		if _, ok := index[steps[i].ID]; ok && state[i] == unseen && visit(i) {
			// found runs along "needs": a needs b needs c needs a.
			return found
		}
	}
	return nil
}

// Order is the steps in an order where each comes after what it needs
// (stable: file order among equals). Steps must have passed Check.
func Order(steps []protocol.PlanStepSpec) []string {
	done := map[string]bool{}
	var out []string
	for len(out) < len(steps) {
		progressed := false
		for _, s := range steps {
			if done[s.ID] {
				continue
			}
			ready := true
			for _, n := range s.Needs {
				ready = ready && done[n]
			}
			if ready {
				done[s.ID] = true
				out = append(out, s.ID)
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

// Overlaps warns of steps that may run at the same time (neither needs the
// other, directly or not) and say they touch the same file: their merges
// would likely conflict, and the second to merge would go back to its
// agent. Not an error (a file is a hint, and a conflict is handled): said
// when the person reviews the plan, with the fix. Steps must have passed
// Check.
func Overlaps(steps []protocol.PlanStepSpec) []protocol.PlanProblem {
	index := map[string]int{}
	for i, s := range steps {
		index[s.ID] = i
	}
	// before[i][j]: step j comes before step i (i needs it, or needs one
	// that does).
	before := make([]map[int]bool, len(steps))
	var reach func(i int) map[int]bool
	reach = func(i int) map[int]bool {
		if before[i] != nil {
			return before[i]
		}
		before[i] = map[int]bool{}
		for _, n := range steps[i].Needs {
			j, ok := index[n]
			if !ok {
				continue
			}
			before[i][j] = true
			for k := range reach(j) {
				before[i][k] = true
			}
		}
		return before[i]
	}
	var out []protocol.PlanProblem
	for i := range steps {
		for j := i + 1; j < len(steps); j++ {
			if reach(i)[j] || reach(j)[i] {
				continue
			}
			var shared []string
			for _, f := range steps[i].Files {
				if slices.Contains(steps[j].Files, f) {
					shared = append(shared, f)
				}
			}
			if len(shared) > 0 {
				out = append(out, protocol.PlanProblem{Step: steps[j].ID, Index: j, Field: "needs", Message: fmt.Sprintf(
					"steps %q and %q may run at the same time and both touch %s: their merges would likely conflict; make one need the other",
					steps[i].ID, steps[j].ID, strings.Join(shared, ", "))})
			}
		}
	}
	return out
}
