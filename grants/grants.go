// Package grants keeps the permission rules a person granted with "allow
// always", so a grant outlives the claude session it was made in.
//
// A grant has a scope. A task grant lasts for the whole task, across every
// restart of its session (pause/resume, follow-ups, mode switches); its owner
// keeps it with the task (Grant is JSON-ready). A repository grant lives in
// <repo>/.familiar/policy.yaml, in the main checkout and so never in a
// task's commits; a user grant in $XDG_CONFIG_HOME/familiar/policy.yaml.
// Those two files are a File each.
//
// Grants only ever allow: they are added to a policy's allow rules, and a
// deny rule still wins over them (package policy).
//
// It never decides a permission itself and never talks to the agent.
package grants

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/familiar-dev/familiar/dirs"
	"github.com/familiar-dev/familiar/policy"
)

// Scope says how long and where a grant holds.
type Scope string

const (
	ScopeTask       Scope = "task"
	ScopeRepository Scope = "repository"
	ScopeUser       Scope = "user"
)

// Valid reports whether s is one of the scopes.
func (s Scope) Valid() bool { return s == ScopeTask || s == ScopeRepository || s == ScopeUser }

// Grant is one rule granted with "allow always".
type Grant struct {
	Rule  string `json:"rule" yaml:"rule"`
	Scope Scope  `json:"scope" yaml:"-"`
	// Tool is the tool whose call the grant was made on.
	Tool string `json:"tool,omitempty" yaml:"tool,omitempty"`
	// TaskID is the task it was granted in.
	TaskID    string    `json:"taskId,omitempty" yaml:"task,omitempty"`
	GrantedAt time.Time `json:"grantedAt" yaml:"grantedAt"`
}

// Rules returns the rules of every grant in lists, once each, in order.
func Rules(lists ...[]Grant) []string {
	var out []string
	for _, l := range lists {
		for _, g := range l {
			if !slices.Contains(out, g.Rule) {
				out = append(out, g.Rule)
			}
		}
	}
	return out
}

// Add returns list with g added, or list unchanged when it already grants
// g.Rule.
func Add(list []Grant, g Grant) ([]Grant, bool) {
	for _, x := range list {
		if x.Rule == g.Rule {
			return list, false
		}
	}
	return append(slices.Clip(list), g), true
}

// Remove returns list without the grant of rule, and whether it had one.
func Remove(list []Grant, rule string) ([]Grant, bool) {
	i := slices.IndexFunc(list, func(g Grant) bool { return g.Rule == rule })
	if i < 0 {
		return list, false
	}
	return slices.Delete(slices.Clone(list), i, i+1), true
}

// File is a policy file of grants (repository or user scope). Its methods are
// safe for concurrent use within one process; writes replace the file
// atomically, so a crash never leaves half of it.
type File struct {
	path  string
	scope Scope
	repo  string // the repository root, for a repository file
	mu    sync.Mutex
}

// RepositoryFile is the repository's grants: <repoRoot>/.familiar/policy.yaml.
//
// When familiar creates it, it also lists it in the repository's
// .git/info/exclude (local, never committed): an untracked file in the
// person's checkout would otherwise count as uncommitted work there and
// stop task/merge. A person who wants it shared adds it with git add -f.
func RepositoryFile(repoRoot string) *File {
	return &File{path: filepath.Join(repoRoot, ".familiar", "policy.yaml"), scope: ScopeRepository, repo: repoRoot}
}

// UserFile is the user's grants: policy.yaml in familiar's configuration
// directory (dirs.Config: $XDG_CONFIG_HOME/familiar, else
// ~/.config/familiar on Linux, ~/Library/Application Support/familiar on
// macOS).
func UserFile() (*File, error) {
	d, err := dirs.Get()
	if d.Config == "" {
		return nil, fmt.Errorf("user grants: %w", err)
	}
	return &File{path: filepath.Join(d.Config, "policy.yaml"), scope: ScopeUser}, nil
}

// Path is where the file is.
func (f *File) Path() string { return f.path }

// document is the file's shape.
type document struct {
	Allow []Grant `yaml:"allow"`
}

const header = "# Permission rules granted with \"allow always\" in familiar. Rules use\n" +
	"# Claude's syntax, e.g. Bash(npm test:*) or Edit(./src/**). Remove a line to\n" +
	"# revoke it (or use policy/revoke); a deny rule in the permission policy\n" +
	"# still wins over these.\n"

// List returns the file's grants; a missing file has none. A file that does
// not parse is an error naming it, never read as empty (a later Add would
// overwrite the person's file).
func (f *File) List() ([]Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read()
}

func (f *File) read() ([]Grant, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.path, err)
	}
	var doc document
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) { // empty: no grants
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	for i := range doc.Allow {
		doc.Allow[i].Scope = f.scope
		if _, err := policy.ParseRule(doc.Allow[i].Rule); err != nil {
			return nil, fmt.Errorf("%s: allow[%d] %q: %w", f.path, i, doc.Allow[i].Rule, err)
		}
	}
	return doc.Allow, nil
}

// Add records g in the file; it reports false when the rule was already
// granted there.
func (f *File) Add(g Grant) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list, err := f.read()
	if err != nil {
		return false, err
	}
	g.Scope = f.scope
	list, added := Add(list, g)
	if !added {
		return false, nil
	}
	return true, f.write(list)
}

// Revoke removes the grant of rule; it reports whether there was one.
func (f *File) Revoke(rule string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list, err := f.read()
	if err != nil {
		return false, err
	}
	list, removed := Remove(list, rule)
	if !removed {
		return false, nil
	}
	return true, f.write(list)
}

func (f *File) write(list []Grant) error {
	body, err := yaml.Marshal(document{Allow: list})
	if err != nil {
		return fmt.Errorf("encode %s: %w", f.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".policy-*.yaml")
	if err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	_, werr := tmp.Write(append([]byte(header), body...))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	_, statErr := os.Stat(f.path)
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if f.repo != "" && errors.Is(statErr, fs.ErrNotExist) {
		if err := excludeLocally(f.repo, "/.familiar/policy.yaml"); err != nil {
			return fmt.Errorf("wrote %s but could not exclude it from git status: %w", f.path, err)
		}
	}
	return nil
}

// excludeLocally adds pattern to the repository's .git/info/exclude unless
// it is there. A checkout whose .git is a file (a linked worktree or a
// submodule) is left alone: its exclude file is elsewhere, and familiar's
// repository root is a main checkout.
func excludeLocally(repoRoot, pattern string) error {
	gitDir := filepath.Join(repoRoot, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil
	}
	path := filepath.Join(gitDir, "info", "exclude")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if string(bytes.TrimSpace(line)) == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	prefix := ""
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		prefix = "\n"
	}
	_, werr := fmt.Fprintf(out, "%s# familiar: allow-always grants of this repository (local)\n%s\n", prefix, pattern)
	return errors.Join(werr, out.Close())
}
