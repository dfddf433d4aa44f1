package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// pathPattern is the content of a Read or Edit rule: a gitignore-style
// pattern rooted where Claude roots it.
type pathPattern struct {
	root    root
	segs    []string // "**" matches any number of segments, others are path.Match patterns
	dirOnly bool     // written with a trailing "/": matches what is inside a directory
}

type root int

const (
	workRoot root = iota // "x/y", "./x", "/x": the working directory
	fsRoot               // "//x"
	homeRoot             // "~/x"
)

func compilePath(content string) (matcher, error) {
	p, r, anchored := content, workRoot, true
	switch {
	case strings.HasPrefix(p, "//"):
		p, r = p[2:], fsRoot
	case p == "~" || strings.HasPrefix(p, "~/"):
		p, r = p[1:], homeRoot
	case strings.HasPrefix(p, "~"):
		return nil, errors.New(`only "~/" is supported for a home directory, not "~user"`)
	case strings.HasPrefix(p, "/"):
		p = p[1:]
	case strings.HasPrefix(p, "./"):
		p = p[2:]
	default:
		// gitignore: a pattern with no slash but a trailing one matches at
		// any depth.
		anchored = strings.Contains(strings.TrimSuffix(p, "/"), "/")
	}
	pat := &pathPattern{root: r, dirOnly: strings.HasSuffix(p, "/")}
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return nil, errors.New(`".." is not supported in a rule's path; write it from the filesystem root as //abs/path`)
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("%q is not a valid pattern", s)
		}
		if s == "**" && len(pat.segs) > 0 && pat.segs[len(pat.segs)-1] == "**" {
			continue
		}
		pat.segs = append(pat.segs, s)
	}
	if len(pat.segs) == 0 { // ".", "/", "~/": everything under that directory
		pat.segs, pat.dirOnly = []string{"**"}, false
	} else if !anchored {
		pat.segs = append([]string{"**"}, pat.segs...)
	}
	return pat, nil
}

// target is the path a call works on, and whether the tool searches a whole
// directory (Grep, Glob, LS) rather than one file.
func (p *pathPattern) target(c *call) (f string, tree, ok bool) {
	return c.target()
}

func (c *call) target() (f string, tree, ok bool) {
	switch c.tool {
	case "Grep", "Glob", "LS":
		dir := "."
		if c.path != nil && *c.path != "" {
			dir = *c.path
		}
		if c.tool == "Glob" && c.pattern != nil {
			// An absolute pattern, or one climbing out with "..", searches
			// where it says, not in path.
			if base, ok := globBase(*c.pattern); ok {
				if path.IsAbs(base) || strings.HasPrefix(base, "~") {
					return base, true, true
				}
				return path.Join(dir, base), true, true
			}
		}
		return dir, true, true // they search the working directory by default
	case "NotebookEdit", "NotebookRead":
		if c.notebookPath != nil {
			return *c.notebookPath, false, *c.notebookPath != ""
		}
	}
	if c.filePath == nil {
		return "", false, false
	}
	return *c.filePath, false, *c.filePath != ""
}

// maxPath is Linux's PATH_MAX: a longer path is not matched (it keeps the
// pattern table small), so it is never allowed by a pattern and always denied.
const maxPath = 4096

type tri int

const (
	no tri = iota
	maybe
	yes
)

// match says whether p covers the call: yes only if certain (for a directory
// search: everything in it), maybe if it cannot be ruled out.
func (p *pathPattern) match(c *call) (tri, string) {
	f, tree, ok := p.target(c)
	if !ok {
		return maybe, ""
	}
	if len(f) > maxPath || strings.IndexByte(f, 0) >= 0 {
		return maybe, f // a NUL byte ends the path where the kernel reads it
	}
	if f == "~" || strings.HasPrefix(f, "~/") {
		if c.dirs.Home == "" {
			return maybe, f
		}
		f = c.dirs.Home + f[1:]
	} else if strings.HasPrefix(f, "~") {
		return maybe, f // ~user
	}
	if !path.IsAbs(f) {
		if c.dirs.Work != "" {
			f = path.Join(c.dirs.Work, f)
		} else if p.root == workRoot {
			rel := path.Clean(f)
			if rel == ".." || strings.HasPrefix(rel, "../") {
				return maybe, f
			}
			return p.matchRel(segments(rel), tree), f
		} else {
			return maybe, f
		}
	}
	f = path.Clean(f)
	base := c.dirs.Work
	switch p.root {
	case fsRoot:
		base = "/"
	case homeRoot:
		base = c.dirs.Home
	}
	if base == "" {
		// The pattern's directory is unknown: it might be any ancestor of f.
		any := &pathPattern{segs: append([]string{"**"}, p.segs...), dirOnly: p.dirOnly}
		if any.matchRel(segments(f), tree) == no {
			return no, f
		}
		return maybe, f
	}
	var rel string
	switch {
	case f == base:
	case base == "/":
		rel = f[1:]
	case strings.HasPrefix(f, base+"/"):
		rel = f[len(base)+1:]
	case tree && within(base, f):
		return maybe, f // a search of a directory above the pattern's
	default:
		return no, f // outside the pattern's directory
	}
	return p.matchRel(segments(rel), tree), f
}

func segments(rel string) []string {
	rel = strings.Trim(rel, "/")
	if rel == "" || rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// matchRel matches the segments of a path relative to the pattern's root.
// As in gitignore, a pattern that matches a directory matches everything in
// it, so a file matches if the pattern matches it or any directory above it.
func (p *pathPattern) matchRel(s []string, tree bool) tri {
	// m[i][j]: the first i pattern segments match the first j path segments.
	// A table, not backtracking: "**/a/**/b/**" stays O(len·len).
	n := len(s)
	m := make([][]bool, len(p.segs)+1)
	for i := range m {
		m[i] = make([]bool, n+1)
	}
	m[0][0] = true
	for i := 1; i <= len(p.segs); i++ {
		seg := p.segs[i-1]
		for j := 0; j <= n; j++ {
			if seg == "**" {
				m[i][j] = m[i-1][j] || j > 0 && m[i][j-1]
			} else if j > 0 && m[i-1][j-1] {
				ok, _ := path.Match(seg, s[j-1])
				m[i][j] = ok
			}
		}
	}
	all := m[len(p.segs)]
	last := n
	if p.dirOnly && !tree {
		last = n - 1 // a file is not the directory the pattern names
	}
	for j := 1; j <= last; j++ {
		if all[j] {
			return yes
		}
	}
	if !tree {
		return no
	}
	// A search covers only what is under the directory: "src/**" covers a
	// search of src.
	if p.segs[len(p.segs)-1] == "**" && m[len(p.segs)-1][n] {
		return yes
	}
	// Some pattern segments are left once the directory is consumed: a file
	// below it may match.
	for i := range m {
		if m[i][n] {
			return maybe
		}
	}
	return no
}

func (p *pathPattern) allow(c *call) bool {
	t, _ := p.match(c)
	return t == yes
}

func (p *pathPattern) deny(c *call) (bool, string) {
	switch t, f := p.match(c); t {
	case yes:
		return true, ": it matches " + f
	case maybe:
		if f == "" {
			return true, ": the call names no path familiar can read"
		}
		if _, tree, _ := p.target(c); tree && c.dirs.Work != "" && within(path.Clean(f), c.dirs.Work) {
			// A search of the worktree is not a read of the denied file in
			// it: denying every Grep and Glob of the worktree for
			// Read(./.env) made the agent useless. A search of the denied
			// directory itself is still denied (yes above).
			return false, ""
		}
		return true, ": familiar cannot rule out that it covers " + f
	}
	return false, ""
}

func within(f, dir string) bool {
	return f == dir || dir == "/" || strings.HasPrefix(f, dir+"/")
}

// globBase is the directory a Glob pattern searches when it says one: the
// segments before its first wildcard, for an absolute pattern, one from
// the home directory, or one climbing out with "..".
func globBase(pattern string) (string, bool) {
	if !path.IsAbs(pattern) && !strings.HasPrefix(pattern, "~") && !strings.Contains(pattern, "..") {
		return "", false
	}
	segs := strings.Split(pattern, "/")
	var keep []string
	for _, s := range segs {
		if strings.ContainsAny(s, "*?[{") {
			break
		}
		keep = append(keep, s)
	}
	base := strings.Join(keep, "/")
	if base == "" && path.IsAbs(pattern) {
		base = "/"
	}
	if base == "" {
		base = "."
	}
	return base, true
}

// editPath is the file an edit tool writes.
func (c *call) editPath() (string, bool) {
	if !slices.Contains(editTools, c.tool) {
		return "", false
	}
	f, _, ok := c.target()
	return f, ok
}

// isGuardedPath reports whether an edit tool writes under .claude/, .git/,
// .vscode/ or .idea/, as written or once its links are resolved.
func (c *call) isGuardedPath() bool {
	f, ok := c.editPath()
	if !ok {
		return false
	}
	if protectedPath(f) != "" {
		return true
	}
	if alt := c.resolved(); alt != nil {
		g, _ := alt.editPath()
		return protectedPath(g) != ""
	}
	return false
}

// resolved is the call with its file path's symbolic links resolved (and
// the directories resolved too, so that a worktree under a linked /tmp
// still holds its files), or nil when that changes nothing.
func (c *call) resolved() *call {
	if c.dirs.Resolve == nil || c.alt == nil && c.noAlt {
		return c.alt
	}
	if c.alt != nil {
		return c.alt
	}
	c.noAlt = true
	f, tree, ok := c.target()
	if !ok || strings.IndexByte(f, 0) >= 0 || len(f) > maxPath {
		return nil
	}
	if f == "~" || strings.HasPrefix(f, "~/") {
		if c.dirs.Home == "" {
			return nil
		}
		f = c.dirs.Home + f[1:]
	}
	if !path.IsAbs(f) {
		if c.dirs.Work == "" {
			return nil
		}
		f = path.Join(c.dirs.Work, f)
	}
	r := c.dirs.Resolve(path.Clean(f))
	rd := Dirs{Work: resolveDir(c.dirs.Resolve, c.dirs.Work), Home: resolveDir(c.dirs.Resolve, c.dirs.Home)}
	if r == "" || r == path.Clean(f) && rd.Work == c.dirs.Work && rd.Home == c.dirs.Home {
		return nil
	}
	alt := *c
	alt.dirs = rd
	alt.parsed, alt.alt = nil, nil
	alt.filePath, alt.notebookPath, alt.path, alt.pattern = nil, nil, nil, nil
	switch {
	case tree:
		alt.path = &r
	case c.notebookPath != nil && (c.tool == "NotebookEdit" || c.tool == "NotebookRead"):
		alt.notebookPath = &r
	default:
		alt.filePath = &r
	}
	c.alt = &alt
	return c.alt
}

func resolveDir(resolve func(string) string, d string) string {
	if d == "" {
		return ""
	}
	if r := resolve(d); r != "" {
		return r
	}
	return d
}
