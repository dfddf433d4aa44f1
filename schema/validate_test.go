package schema_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/repoconfig"
	"github.com/familiar-dev/familiar/runfile"
)

// validate checks v against the subset of JSON Schema the generator writes
// (type, properties, additionalProperties, required, enum, items, minItems,
// anyOf), returning what does not hold.
func validate(s map[string]any, v any, at string) []string {
	if alts, ok := s["anyOf"].([]any); ok {
		var all []string
		for _, a := range alts {
			errs := validate(a.(map[string]any), v, at)
			if len(errs) == 0 {
				return nil
			}
			all = append(all, errs...)
		}
		return all
	}
	var errs []string
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(errs, at+": not an object")
		}
		props, _ := s["properties"].(map[string]any)
		for k, val := range m {
			if p, ok := props[k]; ok {
				errs = append(errs, validate(p.(map[string]any), val, at+"."+k)...)
			} else if extra, ok := s["additionalProperties"].(map[string]any); ok {
				errs = append(errs, validate(extra, val, at+"."+k)...)
			} else if s["additionalProperties"] == false {
				errs = append(errs, fmt.Sprintf("%s: unknown key %q", at, k))
			}
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: %s is required", at, r))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return append(errs, at+": not an array")
		}
		if n, ok := s["minItems"].(float64); ok && float64(len(a)) < n {
			errs = append(errs, fmt.Sprintf("%s: fewer than %v items", at, n))
		}
		for i, x := range a {
			errs = append(errs, validate(s["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			errs = append(errs, at+": not a string")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, at+": not a boolean")
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			errs = append(errs, at+": not an integer")
		}
	case "number":
		if _, ok := v.(float64); !ok {
			errs = append(errs, at+": not a number")
		}
	}
	return errs
}

// asJSON reads YAML (or JSON) into what encoding/json makes of it.
func asJSON(t *testing.T, data []byte) any {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemasAgreeWithFamiliar: the files familiar accepts are valid by
// their schemas, and a misspelt key familiar refuses is refused by them too
// (what an editor's squiggle shows before familiar run says it).
func TestSchemasAgreeWithFamiliar(t *testing.T) {
	files := generate(t)
	load := func(name string) map[string]any {
		var s map[string]any
		if err := json.Unmarshal(files[name], &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	tasks, config := load("tasks.schema.json"), load("config.schema.json")
	root := testenv.RepoRoot()
	for _, name := range []string{"examples/tasks.yaml", "runfile/testdata/example.yaml", "runfile/testdata/example.json"} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runfile.Parse(name, data); err != nil {
			t.Fatalf("familiar refuses %s: %v", name, err)
		}
		if errs := validate(tasks, asJSON(t, data), name); len(errs) > 0 {
			t.Errorf("familiar accepts %s, its schema does not: %s", name, strings.Join(errs, "; "))
		}
	}
	for _, c := range []struct{ name, tasksFile string }{
		{"a misspelt task key", "tasks:\n  - title: a\n    descripton: b\n"},
		{"a misspelt setting", "settings: {concurency: 2}\ntasks:\n  - {title: a, description: b}\n"},
		{"a task without a description", "- title: a\n"},
		{"an unknown driver", "- {title: a, description: b, driver: tmux}\n"},
		{"a policy's unknown default", "- {title: a, description: b, permissionPolicy: {default: maybe}}\n"},
		{"no tasks", "settings: {concurrency: 2}\n"},
	} {
		if _, err := runfile.Parse("t.yaml", []byte(c.tasksFile)); err == nil {
			t.Errorf("%s: familiar accepts it", c.name)
		}
		if errs := validate(tasks, asJSON(t, []byte(c.tasksFile)), "t.yaml"); len(errs) == 0 {
			t.Errorf("%s: the schema accepts it", c.name)
		}
	}
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"mergeVerify: make test\ntestCommands: [go test ./...]\n", true},
		{"mergeVerfy: make test\n", false},
		{"testCommands: make test\n", false},
	} {
		_, err := repoconfig.Parse("config.yaml", []byte(c.in))
		errs := validate(config, asJSON(t, []byte(c.in)), "config.yaml")
		if (err == nil) != c.ok || (len(errs) == 0) != c.ok {
			t.Errorf("%q: familiar says %v, the schema %v; want ok=%v", c.in, err, errs, c.ok)
		}
	}
}
