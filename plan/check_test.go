package plan

import (
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

func spec(id string, needs ...string) protocol.PlanStepSpec {
	return protocol.PlanStepSpec{ID: id, Title: "Step " + id, Description: "do " + id, Needs: needs}
}

func TestCheckNamesStepAndField(t *testing.T) {
	cases := []struct {
		name  string
		steps []protocol.PlanStepSpec
		want  []string // "index field substring"
	}{
		{"fine", []protocol.PlanStepSpec{spec("a"), spec("b"), spec("c", "a"), spec("d", "a", "b"), spec("e", "c", "d")}, nil},
		{"none", nil, []string{"-1 steps no steps"}},
		{"unknown need", []protocol.PlanStepSpec{spec("a"), spec("b", "zz")}, []string{`1 needs "zz", which is not a step`}},
		{"self", []protocol.PlanStepSpec{spec("a", "a")}, []string{"0 needs needs itself"}},
		{"twice", []protocol.PlanStepSpec{spec("a"), spec("b", "a", "a")}, []string{`1 needs needs "a" twice`}},
		{"cycle", []protocol.PlanStepSpec{spec("a", "c"), spec("b", "a"), spec("c", "b")}, []string{"0 needs a → c → b → a"}},
		{"long cycle off a root", []protocol.PlanStepSpec{spec("r"), spec("x", "r", "z"), spec("y", "x"), spec("z", "y")}, []string{"1 needs x → z → y → x"}},
		{"empty step", []protocol.PlanStepSpec{{ID: "a", Title: "A"}}, []string{"0 description is empty"}},
		{"no title", []protocol.PlanStepSpec{{ID: "a", Description: "x"}}, []string{"0 title no title"}},
		{"no id", []protocol.PlanStepSpec{{Title: "A", Description: "x"}}, []string{"0 id has no id"}},
		{"bad id", []protocol.PlanStepSpec{{ID: "a b", Title: "A", Description: "x"}}, []string{"0 id must be letters"}},
		{"same id", []protocol.PlanStepSpec{spec("a"), spec("a")}, []string{`1 id steps 1 and 2 are both called "a"`}},
		{"bad mode", []protocol.PlanStepSpec{{ID: "a", Title: "A", Description: "x", Mode: "boss"}}, []string{"0 mode not one of"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(c.steps)
			if len(got) != len(c.want) {
				t.Fatalf("problems = %+v, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				parts := strings.SplitN(w, " ", 3)
				p := got[i]
				if itoa(p.Index) != parts[0] || p.Field != parts[1] || !strings.Contains(p.Message, parts[2]) {
					t.Errorf("problem %d = %+v, want %s", i, p, w)
				}
				if p.Index >= 0 && p.Step != c.steps[p.Index].ID {
					t.Errorf("problem %d names step %q, not %q", i, p.Step, c.steps[p.Index].ID)
				}
			}
		})
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	return string(rune('0' + i))
}

func TestOrderPutsNeedsFirst(t *testing.T) {
	got := Order([]protocol.PlanStepSpec{spec("e", "c", "d"), spec("c", "a"), spec("d", "a", "b"), spec("a"), spec("b")})
	if strings.Join(got, "") != "abcde" {
		t.Errorf("order = %v", got)
	}
}

func TestParseTheArchitectsBlock(t *testing.T) {
	msg := "Here is a first idea:\n```familiar-plan\nsteps:\n  - id: old\n```\nAnd the plan:\n\n" +
		"```familiar-plan\nsteps:\n  - id: a\n    title: Add greet\n    description: |\n      Write greet.go.\n      Two lines.\n" +
		"    acceptanceCriteria: [it compiles]\n    files: [greet.go]\n    needs: []\n" +
		"  - id: b\n    title: Use it\n    description: call greet\n    needs: a\n```\nThat is all."
	steps, probs := Parse(msg)
	if len(probs) > 0 {
		t.Fatalf("problems: %+v", probs)
	}
	if len(steps) != 2 || steps[0].ID != "a" || steps[0].Description != "Write greet.go.\nTwo lines." ||
		steps[0].Files[0] != "greet.go" || steps[0].AcceptanceCriteria[0] != "it compiles" || steps[1].Needs[0] != "a" {
		t.Fatalf("steps = %+v", steps)
	}
}

func TestParseSaysWhatIsWrong(t *testing.T) {
	cases := map[string]string{
		"no block":       "I think we should do it in three steps.",
		"not yaml":       "```familiar-plan\nsteps: [\n```",
		"no steps":       "```familiar-plan\ngoal: x\n```",
		"unknown field":  "```familiar-plan\nsteps:\n  - id: a\n    title: A\n    description: x\n    depends: [b]\n```",
		"needs not list": "```familiar-plan\nsteps:\n  - id: a\n    title: A\n    description: x\n    needs: {b: 1}\n```",
		"cycle":          "```familiar-plan\nsteps:\n  - {id: a, title: A, description: x, needs: [b]}\n  - {id: b, title: B, description: y, needs: [a]}\n```",
		"unknown need":   "```familiar-plan\nsteps:\n  - {id: a, title: A, description: x, needs: [api]}\n```",
	}
	want := map[string]string{
		"no block":       "-1 steps no ```familiar-plan block",
		"not yaml":       "-1 steps not valid YAML",
		"no steps":       "-1 steps list of steps",
		"unknown field":  `0 depends step "a" has a field "depends"`,
		"needs not list": `0 needs step "a"'s needs`,
		"cycle":          "0 needs a → b → a",
		"unknown need":   `0 needs "api", which is not a step`,
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, probs := Parse(text)
			if len(probs) == 0 {
				t.Fatal("no problem found")
			}
			parts := strings.SplitN(want[name], " ", 3)
			p := probs[0]
			if itoa(p.Index) != parts[0] || p.Field != parts[1] || !strings.Contains(p.Message, parts[2]) {
				t.Errorf("problem = %+v, want %s", p, want[name])
			}
		})
	}
}

// FuzzParse: no text makes Parse panic, and whatever it accepts passes
// Check.
func FuzzParse(f *testing.F) {
	f.Add("```familiar-plan\nsteps:\n  - {id: a, title: A, description: x, needs: [b]}\n  - {id: b, title: B, description: y}\n```")
	f.Add("```familiar-plan\n- id: a\n```")
	f.Add("~~~familiar-plan\nsteps: 3\n~~~")
	f.Fuzz(func(t *testing.T, text string) {
		steps, probs := Parse(text)
		if len(probs) == 0 && len(Check(steps)) > 0 {
			t.Fatalf("accepted steps Check refuses: %+v", steps)
		}
	})
}

func TestOverlapsWarnOfParallelStepsOnOneFile(t *testing.T) {
	steps := []protocol.PlanStepSpec{spec("a"), spec("b"), spec("c", "a"), spec("d", "b")}
	steps[0].Files = []string{"api.go", "x.go"}
	steps[1].Files = []string{"api.go"}
	steps[2].Files = []string{"api.go"} // after a: ordered with a, not with b
	steps[3].Files = []string{"x.go"}   // after b only: parallel to a
	got := Overlaps(steps)
	var said []string
	for _, p := range got {
		said = append(said, p.Message)
	}
	want := []string{
		`steps "a" and "b" may run at the same time and both touch api.go`,
		`steps "a" and "d" may run at the same time and both touch x.go`,
		`steps "b" and "c" may run at the same time and both touch api.go`,
	}
	if len(said) != len(want) {
		t.Fatalf("overlaps = %q", said)
	}
	for i := range want {
		if !strings.Contains(said[i], want[i]) || !strings.Contains(said[i], "make one need the other") {
			t.Errorf("overlap %d = %q, want %q", i, said[i], want[i])
		}
	}
	steps[1].Needs = []string{"a"}
	steps[3].Needs = []string{"b"}
	steps[2].Needs = []string{"a", "b"}
	if got := Overlaps(steps); len(got) != 0 {
		t.Errorf("ordered steps: %+v", got)
	}
}
