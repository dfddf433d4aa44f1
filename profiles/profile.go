package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/familiar-dev/familiar/dirs"
)

// Source says where a profile or skill comes from. A workspace one overrides
// a global one of the same name, which overrides a built-in one.
type Source string

const (
	SourceBuiltin   Source = "builtin"
	SourceGlobal    Source = "global"
	SourceWorkspace Source = "workspace"
)

func (s Source) rank() int {
	switch s {
	case SourceWorkspace:
		return 3
	case SourceGlobal:
		return 2
	}
	return 1
}

// Dirs are the directories familiar reads profiles and skills from:
// <Workspace>/profiles/*.md, <Workspace>/skills/<name>/SKILL.md, and the
// same under Global. Either may be "" (not used) or not exist yet.
type Dirs struct {
	Workspace string // <repo>/.familiar
	Global    string // $XDG_CONFIG_HOME/familiar, else ~/.config/familiar
}

// DirsFor returns the directories for a repository.
func DirsFor(repoRoot string) Dirs {
	d := Dirs{Global: GlobalDir()}
	if repoRoot != "" {
		d.Workspace = filepath.Join(repoRoot, ".familiar")
	}
	return d
}

// GlobalDir is familiar's per-user configuration directory (dirs.Config:
// $XDG_CONFIG_HOME/familiar, else ~/.config/familiar on Linux and
// ~/Library/Application Support/familiar on macOS); "" if there is no home.
func GlobalDir() string { return dirs.Config() }

// Profile is a prompt template with the tool rules and default mode for a
// kind of work.
type Profile struct {
	Name        string
	Description string
	// TaskTypes are the task types this profile is chosen for when a task
	// names no profile. A profile named after a task type that declares none
	// claims its own type ("fix.md" is used for fix tasks).
	TaskTypes       []string
	Mode            string   // default mode for its tasks; "" = executor
	AllowedTools    []string // merged into the mode's (disallowed wins)
	DisallowedTools []string
	// Skills are the skills a task of this profile gets when task/create
	// names none (and a client pre-selects).
	Skills []string
	// Network is the only network the sandboxed Bash commands of its tasks
	// reach (domains, *.example.com); empty leaves it open (issue 37).
	Network []string
	Source  Source
	Path    string // the file; "" for built-ins

	tmpl     *template.Template // the body is the template named "body"
	bodyLine int                // file line where the body starts
}

// nameRE is what a profile or skill name may look like: it becomes a path
// segment and appears in the protocol.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// templateFuncs are available in every template.
var templateFuncs = template.FuncMap{
	"join":  strings.Join,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
}

var (
	baseTemplate = template.Must(template.New("partials").Funcs(templateFuncs).Parse(partials))
	// overrideTail follows a task's promptOverride: the context still goes in.
	overrideTail = template.Must(template.Must(baseTemplate.Clone()).New("body").Parse(`{{template "context" .}}{{template "contract" .}}`))
	partialNames = []string{"partials", "task", "mode", "notes", "hints", "prior", "others", "skills", "context", "contract"}
)

var builtinProfiles = sync.OnceValue(func() []*Profile {
	var out []*Profile
	for _, b := range builtins {
		p := &Profile{Name: b.name, Description: b.description, TaskTypes: b.taskTypes, Source: SourceBuiltin}
		if err := p.compile("builtin:"+b.name, b.body, 1); err != nil {
			panic(err) // a bug in builtin.go, caught by every test
		}
		out = append(out, p)
	}
	return out
})

// compile parses body as p's template and tries it on sample data, so that a
// template that cannot render fails when it is loaded, with its line.
func (p *Profile) compile(path, body string, bodyLine int) error {
	p.bodyLine = bodyLine
	t, err := parseBody(body)
	if err != nil {
		return templateError(path, bodyLine, err)
	}
	if !mentionsTask(t.Lookup("body").Tree.Root) {
		// A body of plain instructions would leave the agent without its
		// task: add the context after them.
		if t, err = parseBody(body + "\n{{template \"context\" .}}"); err != nil {
			return templateError(path, bodyLine, err)
		}
	}
	if err := checkLimits(t); err != nil {
		return templateError(path, bodyLine, err)
	}
	p.tmpl = t
	if _, err := p.execute(sampleData); err != nil {
		return templateError(path, bodyLine, err)
	}
	return nil
}

func parseBody(body string) (*template.Template, error) {
	t := template.Must(baseTemplate.Clone())
	return t.New("body").Parse(body)
}

// walkTemplate calls fn on every node of a parse tree.
func walkTemplate(n parse.Node, fn func(parse.Node)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		fn(n)
		for _, c := range n.Nodes {
			walkTemplate(c, fn)
		}
		return
	case *parse.PipeNode:
		if n == nil {
			return
		}
		fn(n)
		for _, c := range n.Cmds {
			walkTemplate(c, fn)
		}
		return
	case nil:
		return
	}
	fn(n)
	switch n := n.(type) {
	case *parse.ActionNode:
		walkTemplate(n.Pipe, fn)
	case *parse.IfNode:
		walkTemplate(n.Pipe, fn)
		walkTemplate(n.List, fn)
		walkTemplate(n.ElseList, fn)
	case *parse.RangeNode:
		walkTemplate(n.Pipe, fn)
		walkTemplate(n.List, fn)
		walkTemplate(n.ElseList, fn)
	case *parse.WithNode:
		walkTemplate(n.Pipe, fn)
		walkTemplate(n.List, fn)
		walkTemplate(n.ElseList, fn)
	case *parse.TemplateNode:
		walkTemplate(n.Pipe, fn)
	case *parse.CommandNode:
		for _, a := range n.Args {
			walkTemplate(a, fn)
		}
	case *parse.ChainNode:
		walkTemplate(n.Node, fn)
	}
}

// mentionsTask reports whether a template uses the task: the "context" or
// "task" template, or .Title.
func mentionsTask(root parse.Node) bool {
	found := false
	walkTemplate(root, func(n parse.Node) {
		switch n := n.(type) {
		case *parse.TemplateNode:
			found = found || n.Name == "context" || n.Name == "task"
		case *parse.FieldNode:
			found = found || slices.Contains(n.Ident, "Title")
		case *parse.VariableNode:
			found = found || slices.Contains(n.Ident, "Title")
		case *parse.ChainNode:
			found = found || slices.Contains(n.Field, "Title")
		}
	})
	return found
}

// maxRangeCount bounds {{range N}} over a number: a prompt has no use for a
// long loop, and one that writes nothing would run unchecked by the output
// limit.
const maxRangeCount = 1000

// checkLimits rejects loops too long to be meant.
func checkLimits(t *template.Template) error {
	var err error
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		walkTemplate(tt.Tree.Root, func(n parse.Node) {
			r, ok := n.(*parse.RangeNode)
			if !ok || err != nil || r.Pipe == nil {
				return
			}
			for _, c := range r.Pipe.Cmds {
				for _, a := range c.Args {
					if num, ok := a.(*parse.NumberNode); ok && (!num.IsInt || num.Int64 > maxRangeCount) {
						err = fmt.Errorf("template: %s:%d: range over %s: at most %d iterations", tt.Name(), lineOf(tt, r), num.Text, maxRangeCount)
					}
				}
			}
		})
	}
	return err
}

func lineOf(t *template.Template, n parse.Node) int {
	loc, _ := t.ErrorContext(n) // "name:line:col"
	parts := strings.Split(loc, ":")
	if len(parts) >= 3 {
		if l, err := strconv.Atoi(parts[len(parts)-2]); err == nil {
			return l
		}
	}
	return 1
}

// maxPromptBytes bounds a rendered prompt (a runaway template); the agent
// types prompts too long for a command-line argument instead. It was: passed to claude as one
// command-line argument (128 KiB at most on Linux).
const maxPromptBytes = 8 << 20

var errPromptTooLong = fmt.Errorf("%w: the prompt is longer than %d KiB", ErrInvalid, maxPromptBytes>>10)

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxPromptBytes {
		return 0, errPromptTooLong
	}
	return b.Buffer.Write(p)
}

func (p *Profile) execute(d Data) (string, error) {
	var b limitedBuffer
	if err := p.tmpl.ExecuteTemplate(&b, "body", d); err != nil {
		return "", err
	}
	return normalize(b.String()), nil
}

// render renders the prompt for d; override, when set, replaces the body.
func (p *Profile) render(d Data, override string) (string, error) {
	if override != "" {
		var b limitedBuffer
		if err := overrideTail.ExecuteTemplate(&b, "body", d); err != nil {
			return "", fmt.Errorf("render the task context: %w", err)
		}
		text := normalize(override + "\n\n" + b.String())
		if len(text) > maxPromptBytes {
			return "", errPromptTooLong
		}
		return text, nil
	}
	text, err := p.execute(d)
	if err != nil {
		if errors.Is(err, errPromptTooLong) {
			return "", err
		}
		return "", templateError(p.where(), p.bodyLine, err)
	}
	return text, nil
}

func (p *Profile) where() string {
	if p.Path != "" {
		return p.Path
	}
	return "builtin:" + p.Name
}

var templateErrRE = regexp.MustCompile(`(?s)^template: ([^:]*):(\d+):(?:\d+:)?\s*(.*)$`)

// templateError names the file line of a text/template error.
func templateError(path string, bodyLine int, err error) error {
	if errors.Is(err, errPromptTooLong) {
		return &FileError{Path: path, Line: bodyLine, Message: "the template renders more than " + strconv.Itoa(maxPromptBytes>>10) + " KiB"}
	}
	msg := err.Error()
	line := bodyLine
	if m := templateErrRE.FindStringSubmatch(msg); m != nil {
		msg = m[3]
		if !slices.Contains(partialNames, m[1]) || m[1] == "body" {
			if n, convErr := strconv.Atoi(m[2]); convErr == nil {
				line = bodyLine + n - 1
			}
		}
	}
	return &FileError{Path: path, Line: line, Message: "template: " + msg}
}

var blankRuns = regexp.MustCompile(`\n{3,}`)

// normalize trims trailing spaces and collapses runs of blank lines.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankRuns.ReplaceAllString(s, "\n\n"))
}

// sampleData exercises every field a template may use.
var sampleData = Data{
	Context: Context{
		Title: "Sample", Description: "A sample task.", AcceptanceCriteria: []string{"it works"},
		Type: TypeImplement, Mode: ModeExecutor, Notes: "notes", HintFiles: []string{"main.go"},
		PriorAttempt: &Attempt{Summary: "s", BlockedReason: "b", LastError: "e"},
		OtherTasks:   []string{"other"},
	},
	Profile: "sample", Outline: []string{"cmd/ (1 file)"},
	Skills: []Skill{{Name: "sample", Description: "d", Content: "c", Source: SourceWorkspace}},
}

// Frontmatter is what the frontmatter of a profile file may say, one field
// a key: the keys parseProfile accepts (profileKeys) and the profile
// file's JSON Schema (package schema) are both read from it.
type Frontmatter struct {
	// The profile's name: letters, digits, '.', '_' and '-'. Default: the
	// file's name without its extension.
	Name string `json:"name,omitempty"`
	// What the profile is for, shown where a profile is chosen.
	Description string `json:"description,omitempty"`
	// The task types this profile is chosen for when a task names no
	// profile. A profile named after a task type that declares none claims
	// its own type ("fix.md" is used for fix tasks).
	TaskTypes []string `json:"taskTypes,omitempty"`
	// The mode its tasks start in. Default: executor.
	Mode string `json:"mode,omitempty"`
	// Claude permission rules its tasks may use without asking, merged into
	// the mode's (a disallowed rule wins), e.g. "Bash(go test:*)".
	AllowedTools []string `json:"allowedTools,omitempty"`
	// Claude permission rules its tasks may never use.
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// The skills a task of this profile gets when it names none.
	Skills []string `json:"skills,omitempty"`
	// The only network the sandboxed Bash commands of its tasks reach:
	// domains, or *.example.com. Empty: open.
	Network []string `json:"network,omitempty"`
}

// profileKeys are the frontmatter keys of a profile file.
var profileKeys = func() []string {
	t := reflect.TypeFor[Frontmatter]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return keys
}()

// parseProfile reads one profile file. On error, name and types say what it
// would have been (types nil and typesKnown false when the frontmatter is
// what is broken).
func parseProfile(path string, data []byte, src Source) (p *Profile, name string, types []string, typesKnown bool, err error) {
	name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, name, nil, false, err
	}
	if err := doc.unknownKeys(profileKeys...); err != nil {
		return nil, name, nil, false, err
	}
	p = &Profile{Source: src, Path: path}
	n, line, err := doc.str("name")
	if err != nil {
		return nil, name, nil, false, err
	}
	if n != "" {
		if !nameRE.MatchString(n) {
			return nil, name, nil, false, doc.errAt(line, fmt.Sprintf("name %q may only use letters, digits, '.', '_' and '-'", n))
		}
		name = n
	} else if !nameRE.MatchString(name) {
		return nil, name, nil, false, doc.errAt(1, fmt.Sprintf("the file name %q is not a valid profile name; set name: in the frontmatter", name))
	}
	p.Name = name
	if p.TaskTypes, line, err = doc.list("taskTypes"); err != nil {
		return nil, name, nil, false, err
	}
	for _, t := range p.TaskTypes {
		if !slices.Contains(TaskTypes, t) {
			return nil, name, nil, false, doc.errAt(line, fmt.Sprintf("unknown task type %q (want %s)", t, strings.Join(TaskTypes, ", ")))
		}
	}
	if len(p.TaskTypes) == 0 && slices.Contains(TaskTypes, name) {
		p.TaskTypes = []string{name}
	}
	types = p.TaskTypes
	if p.Description, _, err = doc.str("description"); err != nil {
		return nil, name, types, true, err
	}
	if p.Mode, line, err = doc.str("mode"); err != nil {
		return nil, name, types, true, err
	}
	if p.Mode != "" && !slices.Contains(Modes, p.Mode) {
		return nil, name, types, true, doc.errAt(line, fmt.Sprintf("unknown mode %q (want %s)", p.Mode, strings.Join(Modes, ", ")))
	}
	for _, key := range []string{"allowedTools", "disallowedTools"} {
		rules, line, err := doc.list(key)
		if err != nil {
			return nil, name, types, true, err
		}
		for _, r := range rules {
			if err := checkToolRule(r); err != nil {
				return nil, name, types, true, doc.errAt(line, fmt.Sprintf("%s: %q is not a tool rule (want e.g. Read or Bash(go test:*))", key, r))
			}
		}
		if key == "allowedTools" {
			p.AllowedTools = rules
		} else {
			p.DisallowedTools = rules
		}
	}
	if p.Skills, line, err = doc.list("skills"); err != nil {
		return nil, name, types, true, err
	}
	for _, s := range p.Skills {
		if !nameRE.MatchString(s) {
			return nil, name, types, true, doc.errAt(line, fmt.Sprintf("skills: %q is not a skill name", s))
		}
	}
	if p.Network, line, err = doc.list("network"); err != nil {
		return nil, name, types, true, err
	}
	for _, d := range p.Network {
		if d == "" || d == "*" || strings.ContainsAny(d, "/ @") {
			return nil, name, types, true, doc.errAt(line, fmt.Sprintf("network: %q is not a domain (want e.g. go.dev or *.npmjs.org)", d))
		}
	}
	if strings.TrimSpace(doc.body) == "" {
		return nil, name, types, true, doc.errAt(doc.bodyLine, "the profile has no template after its frontmatter")
	}
	if err := p.compile(path, doc.body, doc.bodyLine); err != nil {
		return nil, name, types, true, err
	}
	return p, name, types, true, nil
}

// Set is the profiles of one repository: built-ins, overridden by global
// ones, overridden by workspace ones. A Set does not change; Load another to
// see edits.
type Set struct {
	byName map[string]*entry
	errs   []*FileError
}

// entry is a profile, or the error of the file that would have been it.
type entry struct {
	profile    *Profile
	err        error
	name       string
	source     Source
	types      []string
	typesKnown bool
}

func (e *entry) claims(taskType string) bool {
	return !e.typesKnown || slices.Contains(e.types, taskType)
}

// Load reads the profiles of dirs over the built-ins. It always returns a
// usable Set; files that could not be used are in Errors, and Resolve
// returns a file's error when that file would have been the profile.
// Reading a few small files, it is cheap enough to call for each task.
func Load(d Dirs) *Set {
	s := &Set{byName: map[string]*entry{}}
	for _, p := range builtinProfiles() {
		s.byName[p.Name] = &entry{profile: p, name: p.Name, source: SourceBuiltin, types: p.TaskTypes, typesKnown: true}
	}
	for _, layer := range []struct {
		dir string
		src Source
	}{{d.Global, SourceGlobal}, {d.Workspace, SourceWorkspace}} {
		if layer.dir == "" {
			continue
		}
		for _, e := range s.loadDir(filepath.Join(layer.dir, "profiles"), layer.src) {
			s.byName[e.name] = e
		}
	}
	return s
}

// loadDir reads dir/*.md in name order.
func (s *Set) loadDir(dir string, src Source) []*entry {
	items, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.errs = append(s.errs, &FileError{Path: dir, Message: "cannot read the profiles directory: " + pathErrText(err)})
		}
		return nil
	}
	var out []*entry
	seen := map[string]string{} // name → file
	for _, it := range items {
		n := it.Name()
		if strings.HasPrefix(n, ".") || !strings.EqualFold(filepath.Ext(n), ".md") || it.IsDir() {
			continue
		}
		path := filepath.Join(dir, n)
		data, err := readSmallFile(path)
		var e *entry
		if err != nil {
			e = &entry{err: err, name: strings.TrimSuffix(n, filepath.Ext(n)), source: src}
		} else {
			p, name, types, known, perr := parseProfile(path, data, src)
			e = &entry{profile: p, err: perr, name: name, source: src, types: types, typesKnown: known}
		}
		if first, dup := seen[e.name]; dup {
			e.profile, e.err = nil, &FileError{Path: path, Line: 1, Message: fmt.Sprintf("profile %q is already defined in %s", e.name, first)}
		}
		seen[e.name] = path
		if e.err != nil {
			var fe *FileError
			if !errors.As(e.err, &fe) {
				fe = &FileError{Path: path, Message: e.err.Error()}
				e.err = fe
			}
			s.errs = append(s.errs, fe)
			e.profile = nil
		}
		out = append(out, e)
	}
	return out
}

// readSmallFile reads a file of at most maxFileSize bytes.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{Path: path, Message: "cannot read: " + pathErrText(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, &FileError{Path: path, Message: "cannot read: " + pathErrText(err)}
	}
	if len(data) > maxFileSize {
		return nil, &FileError{Path: path, Message: fmt.Sprintf("file is over the %d KiB limit", maxFileSize>>10)}
	}
	return data, nil
}

// pathErrText is an *os.PathError's reason without the path (which the
// FileError already carries).
func pathErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Errors lists the files that could not be used, for a log or a
// server/message notification.
func (s *Set) Errors() []*FileError { return slices.Clone(s.errs) }

// List returns the usable profiles by name (profiles/list).
func (s *Set) List() []Profile {
	var out []Profile
	for _, e := range s.byName {
		if e.profile != nil {
			p := *e.profile
			p.TaskTypes = slices.Clone(p.TaskTypes)
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Resolve returns the profile for a task. name, when set, is the profile
// asked for; otherwise the profile claiming taskType from the highest source
// (workspace, global, built-in) is chosen — one named after the type before
// others, then by name — and "default" when none claims it. The empty type
// is custom.
//
// A file that would have been the profile but is broken fails with its
// FileError ("path:line: message"); an unknown name fails with ErrNotFound.
func (s *Set) Resolve(name, taskType string) (*Profile, error) {
	if name != "" {
		e := s.byName[name]
		if e == nil {
			return nil, fmt.Errorf("%w: no profile named %q (have: %s)", ErrNotFound, name, strings.Join(s.names(), ", "))
		}
		return e.profile, e.err
	}
	if taskType == "" {
		taskType = TypeCustom
	}
	var best *entry
	for _, e := range s.byName {
		if !e.claims(taskType) {
			continue
		}
		if best == nil || better(e, best, taskType) {
			best = e
		}
	}
	if best == nil {
		best = s.byName[DefaultProfile]
	}
	if best == nil {
		return nil, fmt.Errorf("%w: no profile for task type %q", ErrNotFound, taskType)
	}
	return best.profile, best.err
}

func better(a, b *entry, taskType string) bool {
	if a.source.rank() != b.source.rank() {
		return a.source.rank() > b.source.rank()
	}
	if (a.name == taskType) != (b.name == taskType) {
		return a.name == taskType
	}
	return a.name < b.name
}

func (s *Set) names() []string {
	var out []string
	for n, e := range s.byName {
		if e.profile != nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
