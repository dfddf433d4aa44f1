package plan

import (
	"fmt"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
	"go.yaml.in/yaml/v3"
)

// Fence is the info string of the fenced block a plan is written in, in an
// architect's final message:
//
//	```familiar-plan
//	steps:
//	  - id: api
//	    title: Add the login endpoint
//	    description: |
//	      ...
//	    acceptanceCriteria: [POST /login answers 200 for a known user]
//	    files: [server/login.go]
//	    needs: []
//	```
const Fence = "familiar-plan"

// stepKeys are the keys a step may have, as PROTOCOL.md documents them.
var stepKeys = []string{"id", "title", "description", "acceptanceCriteria", "files", "needs", "mode", "profile"}

// Parse reads the plan out of text: the last ```familiar-plan fenced block
// (an architect may show a draft before its final one). Every problem
// names the step and field, as Check's do; Parse runs Check too.
func Parse(text string) ([]protocol.PlanStepSpec, []protocol.PlanProblem) {
	block, ok := lastBlock(text)
	if !ok {
		return nil, []protocol.PlanProblem{{Index: -1, Field: "steps",
			Message: "no ```" + Fence + " block was found in the architect's final message"}}
	}
	steps, probs := decode(block)
	if len(probs) > 0 {
		return steps, probs
	}
	return steps, Check(steps)
}

// lastBlock finds the body of the last fenced block whose info string is
// Fence (``` or ~~~, indented up to three spaces).
func lastBlock(text string) (string, bool) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var body []string
	found, in := false, false
	fence := ""
	var cur []string
	for _, line := range lines {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 {
			t = ""
		}
		if !in {
			for _, f := range []string{"```", "~~~"} {
				if rest, ok := strings.CutPrefix(t, f); ok && strings.TrimSpace(strings.TrimLeft(rest, f[:1])) == Fence {
					in, fence, cur = true, f, nil
				}
			}
			continue
		}
		if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" ") == "" {
			in, found, body = false, true, cur
			continue
		}
		cur = append(cur, line)
	}
	if in { // an unclosed last block: the message ended inside it
		found, body = true, cur
	}
	return strings.Join(body, "\n"), found
}

func decode(block string) ([]protocol.PlanStepSpec, []protocol.PlanProblem) {
	whole := func(format string, args ...any) []protocol.PlanProblem {
		return []protocol.PlanProblem{{Index: -1, Field: "steps", Message: fmt.Sprintf(format, args...)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
		return nil, whole("the plan is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, whole("the plan block is empty")
	}
	root := doc.Content[0]
	var list *yaml.Node
	switch root.Kind {
	case yaml.SequenceNode:
		list = root
	case yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "steps" {
				list = root.Content[i+1]
			}
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, whole("the plan must be a list of steps under steps: (line %d)", root.Line)
	}
	var steps []protocol.PlanStepSpec
	var probs []protocol.PlanProblem
	for i, n := range list.Content {
		s, p := decodeStep(i, n)
		steps = append(steps, s)
		probs = append(probs, p...)
	}
	return steps, probs
}

func decodeStep(i int, n *yaml.Node) (protocol.PlanStepSpec, []protocol.PlanProblem) {
	var s protocol.PlanStepSpec
	var probs []protocol.PlanProblem
	bad := func(field, format string, args ...any) {
		probs = append(probs, protocol.PlanProblem{Step: s.ID, Index: i, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if n.Kind != yaml.MappingNode {
		bad("steps", "step %d (line %d) is not a mapping of id, title, description, needs, ...", i+1, n.Line)
		return s, probs
	}
	// The id first, so every problem of the step names it.
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == "id" {
			s.ID = scalar(n.Content[k+1])
		}
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := n.Content[k].Value, n.Content[k+1]
		switch key {
		case "id":
		case "title":
			s.Title = scalar(val)
		case "description":
			s.Description = scalar(val)
		case "mode":
			s.Mode = protocol.Mode(scalar(val))
		case "profile":
			s.Profile = scalar(val)
		case "acceptanceCriteria", "files", "needs":
			list, ok := strings_(val)
			if !ok {
				bad(key, "step %s's %s (line %d) must be a list", stepName(s, i), key, val.Line)
				continue
			}
			switch key {
			case "acceptanceCriteria":
				s.AcceptanceCriteria = list
			case "files":
				s.Files = list
			case "needs":
				s.Needs = list
			}
		default:
			bad(key, "step %s has a field %q (line %d) a plan does not have; its fields are %s", stepName(s, i), key, n.Content[k].Line, strings.Join(stepKeys, ", "))
		}
	}
	return s, probs
}

func stepName(s protocol.PlanStepSpec, i int) string { return name(s, i) }

func scalar(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strings.TrimSpace(n.Value)
	}
	return ""
}

// strings_ reads a list of strings; a single string (needs: api) is a list
// of one, and an empty value none.
func strings_(n *yaml.Node) ([]string, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" || strings.TrimSpace(n.Value) == "" {
			return nil, true
		}
		return []string{strings.TrimSpace(n.Value)}, true
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, false
			}
			out = append(out, strings.TrimSpace(c.Value))
		}
		return out, true
	}
	return nil, false
}
