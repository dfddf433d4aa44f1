package profiles

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDocument(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		keys     []string
		body     string
		bodyLine int
		errLine  int    // 0 = no error
		errText  string // part of the message
	}{
		{name: "no frontmatter", in: "just text\n", body: "just text\n", bodyLine: 1},
		{name: "empty file", in: "", body: "", bodyLine: 1},
		{name: "frontmatter", in: "---\nname: x\ndescription: y\n---\nbody\n", keys: []string{"name", "description"}, body: "body\n", bodyLine: 5},
		{name: "empty frontmatter", in: "---\n---\nbody", body: "body", bodyLine: 3},
		{name: "crlf and bom", in: "\ufeff---\r\nname: x\r\n---\r\nbody\r\n", keys: []string{"name"}, body: "body\n", bodyLine: 4},
		{name: "trailing spaces on fences", in: "--- \nname: x\n---\t\nb", keys: []string{"name"}, body: "b", bodyLine: 4},
		{name: "not closed", in: "---\nname: x\nbody\n", errLine: 1, errText: "no --- line closes it"},
		{name: "yaml syntax error", in: "---\nname: x\ndescription: [a, b\n---\nbody", errLine: 3, errText: "frontmatter:"},
		{name: "parser error on first line", in: "---\nname: [x\n---\n", errLine: 2, errText: "did not find expected"},
		{name: "scanner error on first line", in: "---\na: b: c\n---\n", errLine: 2, errText: "mapping values"},
		{name: "bad indentation", in: "---\nname: x\n  bad: 1\nmore: 2\n---\n", errLine: 3, errText: "mapping values"},
		{name: "not a mapping", in: "---\n- a\n- b\n---\n", errLine: 2, errText: "mapping of keys"},
		{name: "duplicate key", in: "---\nname: a\nmode: x\nname: b\n---\n", errLine: 4, errText: `"name" appears twice`},
		{name: "unknown anchor", in: "---\nname: *nope\n---\n", errLine: 2, errText: "unknown anchor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseDocument("p.md", []byte(tt.in))
			if tt.errLine != 0 {
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("err = %v, want a FileError", err)
				}
				if fe.Line != tt.errLine || fe.Path != "p.md" || !strings.Contains(fe.Message, tt.errText) {
					t.Fatalf("err = %q (line %d), want line %d containing %q", fe, fe.Line, tt.errLine, tt.errText)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("err is not ErrInvalid")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.body != tt.body || doc.bodyLine != tt.bodyLine {
				t.Errorf("body = %q at %d, want %q at %d", doc.body, doc.bodyLine, tt.body, tt.bodyLine)
			}
			if len(doc.keys) != len(tt.keys) {
				t.Errorf("keys = %v, want %v", doc.keys, tt.keys)
			}
			for _, k := range tt.keys {
				if _, ok := doc.keys[k]; !ok {
					t.Errorf("key %q missing", k)
				}
			}
		})
	}
}

func TestDocumentValues(t *testing.T) {
	doc, err := parseDocument("p.md", []byte("---\n"+
		"a: hello\n"+
		"b: [x, y]\n"+
		"c: Read, Grep, Bash(go test:*)\n"+
		"d:\n  - one\n  - two\n"+
		"e: ~\n"+
		"f: {k: v}\n"+
		"g: [[nested]]\n"+
		"---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err := doc.str("a"); s != "hello" || err != nil {
		t.Errorf("a = %q, %v", s, err)
	}
	if s, _, err := doc.str("e"); s != "" || err != nil {
		t.Errorf("e = %q, %v", s, err)
	}
	if s, _, err := doc.str("missing"); s != "" || err != nil {
		t.Errorf("missing = %q, %v", s, err)
	}
	for key, want := range map[string]string{"b": "x|y", "c": "Read|Grep|Bash(go test:*)", "d": "one|two"} {
		l, _, err := doc.list(key)
		if err != nil || strings.Join(l, "|") != want {
			t.Errorf("%s = %q, %v; want %s", key, l, err, want)
		}
	}
	if _, _, err := doc.str("f"); err == nil || !strings.Contains(err.Error(), "p.md:9:") {
		t.Errorf("str(f) err = %v, want line 9", err)
	}
	if _, _, err := doc.list("f"); err == nil {
		t.Errorf("list(f) err = nil")
	}
	if _, _, err := doc.list("g"); err == nil || !strings.Contains(err.Error(), "p.md:10:") {
		t.Errorf("list(g) err = %v, want line 10", err)
	}
}

func TestParseDocumentTooLarge(t *testing.T) {
	_, err := parseDocument("big.md", []byte(strings.Repeat("x", maxFileSize+1)))
	if err == nil || !strings.Contains(err.Error(), "big.md: file is") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzFrontmatter checks that no file content makes parsing panic, and that
// every error names its file and a sensible line.
func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{
		"", "---", "---\n---\n", "---\nname: x\n---\nbody {{.Title}}",
		"---\nname: &a [*a]\n---\n", "---\ntaskTypes: fix\nmode: auditor\nallowedTools: [Read]\n---\n{{template \"context\" .}}",
		"---\n: :\n---\n", "---\n\tx: 1\n---\n", "\ufeff---\r\nname: x\r\n---\r\n",
		"---\nname: x\n---\n{{if}}", "---\nallowed-tools: Read, Bash(ls:*)\n---\ncontent",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		check := func(err error) {
			if err == nil {
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FileError", err)
			}
			if fe.Path == "" || fe.Line < 0 || fe.Line > lines+1 {
				t.Fatalf("bad error position: %q (file has %d lines)", fe, lines)
			}
		}
		doc, err := parseDocument("f.md", data)
		check(err)
		if err == nil && (doc.bodyLine < 1 || doc.bodyLine > lines+1) {
			t.Fatalf("body line %d of %d", doc.bodyLine, lines)
		}
		_, _, _, _, err = parseProfile("/p/f.md", data, SourceWorkspace)
		check(err)
		_, err = parseSkill("/s/name/SKILL.md", data, SourceWorkspace)
		check(err)
	})
}
