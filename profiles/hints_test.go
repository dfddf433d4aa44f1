package profiles

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestQueryWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Fix the bug in the parser", []string{"parser"}},
		{"Add WorktreeCreate retries", []string{"worktreecreate", "worktree", "create", "retries"}},
		{"parseHTTPRequest: go to DB", []string{"parsehttprequest", "parse", "http", "request"}},
		{"snake_case_name and kebab-name", []string{"snake", "case", "name", "kebab"}},
		{"a an of to in on is", nil},
		{"Ünïcode wörds zählen", []string{"ünïcode", "wörds", "zählen"}},
		{"repeat repeat REPEAT", []string{"repeat"}},
	}
	for _, tt := range tests {
		if got := queryWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("queryWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	many := ""
	for i := range 100 {
		many += fmt.Sprintf(" word%03d", i)
	}
	if n := len(queryWords(many)); n != maxQueryWords {
		t.Errorf("%d words, want the cap %d", n, maxQueryWords)
	}
}

func TestRelatedFiles(t *testing.T) {
	tracked := []string{
		"README.md",
		"internal/parser/lexer.go",
		"internal/parser/parser.go",
		"internal/parser/parser_test.go",
		"cmd/tool/main.go",
		"docs/parser.md",
		"profiles/profile.go",
		"profiles/skills.go",
		"worktree/create.go",
		"vendor/x/parsers/p.go",
	}
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"exact name and directory beat one match", "The parser lexer drops tokens", 10, []string{
			"internal/parser/lexer.go",       // parser (2) + lexer (2, +1 in the name)
			"docs/parser.md",                 // parser (2+1), shallowest
			"internal/parser/parser.go",      // parser (2+1)
			"internal/parser/parser_test.go", // parser (2+1), alphabetically after
			"vendor/x/parsers/p.go",          // a prefix match (1)
		}},
		{"prefix match both ways", "skill profiles", 10, []string{"profiles/skills.go", "profiles/profile.go"}},
		{"limit", "parser", 2, []string{"docs/parser.md", "internal/parser/parser.go"}},
		{"nothing matches", "quantum entanglement", 10, nil},
		{"only stop words", "fix the bug", 10, nil},
		{"camel case in the title", "WorktreeCreate fails", 10, []string{"worktree/create.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RelatedFiles(tt.text, tracked, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestHintsAtMostTenDerived(t *testing.T) {
	var tracked []string
	for i := range 50 {
		tracked = append(tracked, fmt.Sprintf("cache/cache_%02d.go", i))
	}
	h := Hints([]string{"main.go", "cache/cache_03.go"}, "Cache eviction", "", tracked)
	if len(h.Files) != 2+MaxRelatedFiles {
		t.Fatalf("%d files: %q", len(h.Files), h.Files)
	}
	if h.Files[0] != "main.go" || h.Files[1] != "cache/cache_03.go" {
		t.Errorf("explicit files are not first: %q", h.Files[:2])
	}
	if n := countOf(h.Files, "cache/cache_03.go"); n != 1 {
		t.Errorf("cache_03 appears %d times", n)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func TestHintsBounded(t *testing.T) {
	var tracked, explicit []string
	for i := range 300 {
		p := fmt.Sprintf("dir%03d/sub%03d/some/long/path/segment/name_%03d.go", i, i, i)
		tracked = append(tracked, p)
		explicit = append(explicit, p)
	}
	h := Hints(explicit, "name segment", "", tracked)
	size := 0
	for _, f := range h.Files {
		size += len(f) + 3
	}
	for _, l := range h.Outline {
		size += len(l) + 1
	}
	if size > MaxHintBytes {
		t.Errorf("hints are %d bytes, over %d", size, MaxHintBytes)
	}
	last := h.Files[len(h.Files)-1]
	if !strings.HasPrefix(last, "… ") || !strings.Contains(last, "more files not shown") {
		t.Errorf("the cut is not noted: %q", last)
	}
	// No tracked paths, no explicit files: no hints at all.
	if h := Hints(nil, "anything", "", nil); h.Files != nil || h.Outline != nil {
		t.Errorf("empty hints = %+v", h)
	}
}

func TestOutline(t *testing.T) {
	tracked := []string{
		"go.mod", "README.md", "./main.go",
		"agent/a.go", "agent/screen/s.go", "agent/screen/t.go", "agent/testdata/x/y.txt",
		"cmd/familiar/main.go",
		".github/workflows/ci.yml",
	}
	want := []string{
		".github/ (1 file)",
		"  workflows/ (1 file)",
		"agent/ (4 files)",
		"  screen/ (2 files)",
		"  testdata/ (1 file)",
		"cmd/ (1 file)",
		"  familiar/ (1 file)",
		"README.md, go.mod, main.go",
	}
	if got := Outline(tracked, 40); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOutlineBounded(t *testing.T) {
	var tracked []string
	for d := range 10 {
		for s := range 20 {
			tracked = append(tracked, fmt.Sprintf("d%02d/s%02d/f.go", d, s))
		}
	}
	for i := range 100 {
		tracked = append(tracked, fmt.Sprintf("top%03d.txt", i))
	}
	got := Outline(tracked, MaxOutlineLines)
	if len(got) > MaxOutlineLines {
		t.Fatalf("%d lines", len(got))
	}
	// 10 directories + 1 line of files leave 29 lines: 2 subdirectories each.
	if got[0] != "d00/ (20 files; 18 dirs not shown)" || got[1] != "  s00/ (1 file)" || got[3] != "d01/ (20 files; 18 dirs not shown)" {
		t.Errorf("got\n%s", strings.Join(got, "\n"))
	}
	if last := got[len(got)-1]; !strings.Contains(last, "more") || len(last) > 200 {
		t.Errorf("top-level files line: %q", last)
	}

	// More top-level directories than lines.
	tracked = nil
	for d := range 100 {
		tracked = append(tracked, fmt.Sprintf("d%03d/f.go", d))
	}
	got = Outline(tracked, MaxOutlineLines)
	if len(got) != MaxOutlineLines || got[len(got)-1] != "… 61 more directories" {
		t.Errorf("%d lines, last %q", len(got), got[len(got)-1])
	}
	if Outline(tracked, 0) != nil {
		t.Errorf("zero lines gave an outline")
	}
}
