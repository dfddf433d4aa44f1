package profiles

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Bounds of the repository hints in a prompt.
const (
	MaxRelatedFiles = 10      // derived files
	MaxOutlineLines = 40      // directory outline
	MaxHintBytes    = 4 << 10 // files and outline together
	maxQueryWords   = 40
)

// RepoHints is the part of a prompt that points at places in the repository.
type RepoHints struct {
	Files   []string // the caller's files first, then derived ones
	Outline []string // a shallow directory outline, one line each
}

// Hints combines the caller's files (already validated, kept first and in
// order) with up to MaxRelatedFiles tracked paths that share words with the
// title and description, and an outline of the tracked paths' top two
// levels; the whole is bounded to MaxHintBytes. tracked is the repository's
// tracked paths (git ls-files), slash-separated and relative.
func Hints(explicit []string, title, description string, tracked []string) RepoHints {
	related := RelatedFiles(title+"\n"+description, tracked, MaxRelatedFiles+len(explicit))
	files := slices.Clone(explicit)
	n := 0
	for _, f := range related {
		if n == MaxRelatedFiles {
			break
		}
		if !slices.Contains(files, f) {
			files = append(files, f)
			n++
		}
	}
	return bound(RepoHints{Files: files, Outline: Outline(tracked, MaxOutlineLines)}, MaxHintBytes)
}

// bound cuts h to about limit bytes as rendered ("- file\n", "line\n"):
// files before the outline, each list cut at the end with a note.
func bound(h RepoHints, limit int) RepoHints {
	used := 0
	take := func(lines []string, cost int, note func(left int) string) []string {
		n := 0
		for n < len(lines) && used+len(lines[n])+cost <= limit {
			used += len(lines[n]) + cost
			n++
		}
		if n == len(lines) {
			return lines
		}
		for n > 0 && used+len(note(len(lines)-n))+cost > limit {
			n--
			used -= len(lines[n]) + cost
		}
		msg := note(len(lines) - n)
		if used+len(msg)+cost > limit {
			return lines[:n:n]
		}
		used += len(msg) + cost
		return append(lines[:n:n], msg)
	}
	h.Files = take(h.Files, len("- \n"), func(n int) string { return fmt.Sprintf("… %s not shown", plural(n, "more file")) })
	h.Outline = take(h.Outline, len("\n"), func(n int) string { return fmt.Sprintf("… %s not shown", plural(n, "more line")) })
	if len(h.Files) == 0 {
		h.Files = nil
	}
	if len(h.Outline) == 0 {
		h.Outline = nil
	}
	return h
}

// stopWords are common words that would match paths by accident, including
// the verbs every task title starts with.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		the and for with that this from into when then than should would could must not
		are was were been being have has had does did but all any can will its our your their
		they them there here what which who whom how why where also only just more most some
		such each other very too out over under about after before again once both few own same
		use uses using used make makes made new add adds added fix fixes fixed implement implements
		update updates updated change changes changed remove removes removed support supports
		file files code test tests testing bug bugs issue issues task work works way need needs
		like get gets set sets one two let lets want wants see via etc instead without within
		please able still even now yet don doesn isn won can't it's`) {
		stopWords[w] = true
	}
}

// queryWords are the distinct words of text worth matching against paths:
// lowercased, at least three characters, not stop words. CamelCase and
// snake_case names also give their parts ("WorktreeCreate" → worktreecreate,
// worktree, create).
func queryWords(text string) []string {
	var out []string
	add := func(w string) {
		w = strings.ToLower(w)
		if len([]rune(w)) >= 3 && !stopWords[w] && !slices.Contains(out, w) && len(out) < maxQueryWords {
			out = append(out, w)
		}
	}
	for _, tok := range strings.FieldsFunc(text, notWordRune) {
		add(tok)
		if parts := splitCamel(tok); len(parts) > 1 {
			for _, p := range parts {
				add(p)
			}
		}
	}
	return out
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// pathTokens are the lowercased words of a path: its segments split on
// punctuation and camelCase.
func pathTokens(p string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(p, notWordRune) {
		out = append(out, strings.ToLower(tok))
		if parts := splitCamel(tok); len(parts) > 1 {
			for _, q := range parts {
				out = append(out, strings.ToLower(q))
			}
		}
	}
	return out
}

// splitCamel splits "parseHTTPRequest" into parse, HTTP, Request.
func splitCamel(s string) []string {
	rs := []rune(s)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
		acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	return append(parts, string(rs[start:]))
}

// RelatedFiles ranks tracked paths by the words of text they contain and
// returns at most limit of them, best first. A word matching a path token
// exactly counts 2, one being a prefix of the other (both ≥ 4 characters:
// "profile"/"profiles") counts 1, and a match in the file name itself adds 1.
// Ties go to shallower, then alphabetically earlier paths.
func RelatedFiles(text string, tracked []string, limit int) []string {
	words := queryWords(text)
	if len(words) == 0 || limit <= 0 {
		return nil
	}
	type hit struct {
		path  string
		score int
		depth int
	}
	var hits []hit
	for _, p := range tracked {
		toks := pathTokens(p)
		base := pathTokens(path.Base(p))
		score := 0
		for _, w := range words {
			s := matchScore(w, toks)
			if s > 0 && matchScore(w, base) > 0 {
				s++
			}
			score += s
		}
		if score > 0 {
			hits = append(hits, hit{p, score, strings.Count(p, "/")})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.depth != b.depth {
			return a.depth < b.depth
		}
		return a.path < b.path
	})
	var out []string
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.path)
	}
	return out
}

func matchScore(w string, toks []string) int {
	best := 0
	for _, t := range toks {
		switch {
		case t == w:
			return 2
		case len(t) >= 4 && len(w) >= 4 && (strings.HasPrefix(t, w) || strings.HasPrefix(w, t)):
			best = 1
		}
	}
	return best
}

// Outline is a shallow outline of the tracked paths: each top-level
// directory with its file count and its subdirectories, then the top-level
// files on one line, in at most maxLines lines. When space is short each
// directory shows fewer subdirectories and says how many it left out.
//
//	agent/ (57 files)
//	  screen/ (12 files)
//	cmd/ (3 files; 1 more dir)
//	go.mod, go.sum, README.md
func Outline(tracked []string, maxLines int) []string {
	if maxLines <= 0 {
		return nil
	}
	type dir struct {
		name  string
		files int
		subs  map[string]int
	}
	dirs := map[string]*dir{}
	var topFiles []string
	for _, p := range tracked {
		p = strings.TrimPrefix(path.Clean(p), "./")
		if p == "." || p == "" || strings.HasPrefix(p, "../") {
			continue
		}
		top, rest, nested := strings.Cut(p, "/")
		if !nested {
			topFiles = append(topFiles, top)
			continue
		}
		d := dirs[top]
		if d == nil {
			d = &dir{name: top, subs: map[string]int{}}
			dirs[top] = d
		}
		d.files++
		if sub, _, ok := strings.Cut(rest, "/"); ok {
			d.subs[sub]++
		}
	}
	names := slices.Sorted(maps.Keys(dirs))
	sort.Strings(topFiles)

	reserved := 0
	if len(topFiles) > 0 {
		reserved = 1
	}
	shownDirs := names
	var moreDirs string
	if len(names)+reserved > maxLines {
		keep := max(maxLines-reserved-1, 0)
		shownDirs = names[:keep]
		moreDirs = fmt.Sprintf("… %d more directories", len(names)-keep)
	}
	budget := maxLines - len(shownDirs) - reserved
	if moreDirs != "" {
		budget--
	}
	// The largest per-directory subdirectory count that fits the budget.
	perDir := 0
	for k := 1; ; k++ {
		need, grew := 0, false
		for _, n := range shownDirs {
			need += min(k, len(dirs[n].subs))
			grew = grew || len(dirs[n].subs) >= k
		}
		if need > budget || !grew {
			break
		}
		perDir = k
	}

	var out []string
	for _, n := range shownDirs {
		d := dirs[n]
		subs := slices.Sorted(maps.Keys(d.subs))
		line := fmt.Sprintf("%s/ (%s", n, plural(d.files, "file"))
		if left := len(subs) - perDir; left > 0 {
			line += fmt.Sprintf("; %s not shown", plural(left, "dir"))
			subs = subs[:perDir]
		}
		out = append(out, line+")")
		for _, s := range subs {
			out = append(out, fmt.Sprintf("  %s/ (%s)", s, plural(d.subs[s], "file")))
		}
	}
	if moreDirs != "" {
		out = append(out, moreDirs)
	}
	if len(topFiles) > 0 {
		out = append(out, joinBounded(topFiles, 160))
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// joinBounded joins names with ", " in about limit bytes, noting the rest.
func joinBounded(names []string, limit int) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 && b.Len()+len(n)+2 > limit {
			fmt.Fprintf(&b, ", … %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}
