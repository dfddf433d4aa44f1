package runfile

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse checks that no input panics and that every outcome keeps
// Parse's promises: an *Error with a sane position, or a file whose tasks
// are valid. Inputs it once failed on live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/example.yaml", "testdata/example.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"- {title: t, description: d}\n",
		`[{"title": "t", "description": "d", "hints": {"files": ["a"]}}]`,
		"tasks:\n  - title: t\n    description: &d d\n    acceptanceCriteria: [*d, *d]\n",
		"tasks:\n  - title: Fix: login\n",
		"tasks: [\n",
		"{\"tasks\": [\n",
		"settings: {concurrency: 0}\ntasks: []\n",
		"tasks:\n  - <<: {title: t}\n",
		"x: 1\n---\ny: 2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"f.yaml", "f.json", "f"} {
			file, err := Parse(path, data)
			if err != nil {
				e, ok := errors.AsType[*Error](err)
				if !ok {
					t.Fatalf("Parse(%s) error is %T, not *Error: %v", path, err, err)
				}
				if e.Path != path || e.Line < 0 || e.Column < 0 || (e.Column > 0 && e.Line == 0) || e.Msg == "" {
					t.Fatalf("Parse(%s) error %#v", path, e)
				}
				continue
			}
			if len(file.Tasks) == 0 || len(file.Lines) != len(file.Tasks) {
				t.Fatalf("Parse(%s) = %d tasks, %d lines", path, len(file.Tasks), len(file.Lines))
			}
			if c := file.Settings.Concurrency; c < 1 || c > 64 {
				t.Fatalf("Parse(%s) concurrency %d", path, c)
			}
			for i := range file.Tasks {
				if err := file.Tasks[i].Validate(); err != nil {
					t.Fatalf("Parse(%s) task %d invalid: %v", path, i, err)
				}
				if file.Lines[i] < 1 {
					t.Fatalf("Parse(%s) task %d at line %d", path, i, file.Lines[i])
				}
			}
		}
	})
}
