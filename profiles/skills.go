package profiles

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/familiar-dev/familiar/clock"
)

// Skill is a piece of know-how a task can ask for by name:
// <dir>/skills/<name>/SKILL.md, YAML frontmatter (name, description, mode,
// allowedTools) and a Markdown body. The directory name is the skill's name.
type Skill struct {
	Name         string
	Description  string
	Mode         string   // the mode the skill is meant for; informational
	AllowedTools []string // merged into the task's allowed tools (a disallowed rule wins)
	Source       Source   // workspace or global
	Path         string   // the SKILL.md file
	Content      string   // the body
}

// skillFile is the file name of a skill inside its directory.
const skillFile = "SKILL.md"

// parseSkill reads one SKILL.md. Unknown keys are ignored: Claude Code's own
// skill files carry more (license, model, …) and should load as they are.
func parseSkill(path string, data []byte, src Source) (Skill, error) {
	name := filepath.Base(filepath.Dir(path))
	doc, err := parseDocument(path, data)
	if err != nil {
		return Skill{}, err
	}
	sk := Skill{Name: name, Source: src, Path: path}
	n, line, err := doc.str("name")
	if err != nil {
		return Skill{}, err
	}
	if n != "" && n != name {
		return Skill{}, doc.errAt(line, fmt.Sprintf("name %q does not match the skill's directory %q", n, name))
	}
	if !nameRE.MatchString(name) {
		return Skill{}, doc.errAt(1, fmt.Sprintf("the directory name %q is not a valid skill name (letters, digits, '.', '_', '-')", name))
	}
	if sk.Description, _, err = doc.str("description"); err != nil {
		return Skill{}, err
	}
	if sk.Mode, line, err = doc.str("mode"); err != nil {
		return Skill{}, err
	}
	if sk.Mode != "" && !slices.Contains(Modes, sk.Mode) {
		return Skill{}, doc.errAt(line, fmt.Sprintf("unknown mode %q (want %s)", sk.Mode, strings.Join(Modes, ", ")))
	}
	key := "allowedTools"
	if _, ok := doc.keys[key]; !ok {
		key = "allowed-tools" // Claude Code's spelling
	}
	if sk.AllowedTools, line, err = doc.list(key); err != nil {
		return Skill{}, err
	}
	for _, r := range sk.AllowedTools {
		if err := checkToolRule(r); err != nil {
			return Skill{}, doc.errAt(line, fmt.Sprintf("%s: %q is not a tool rule (want e.g. Read or Bash(go test:*))", key, r))
		}
	}
	sk.Content = strings.TrimSpace(doc.body)
	if sk.Content == "" {
		return Skill{}, doc.errAt(doc.bodyLine, "the skill has no content after its frontmatter")
	}
	return sk, nil
}

// SkillsChange is what one reload changed (skills/changed).
type SkillsChange struct {
	Added, Updated, Removed []string // skill names, sorted
	// Errors are the skill files that cannot be used now; a skill whose file
	// broke keeps its last good version.
	Errors []*FileError
}

// SkillsOptions configure WatchSkills.
type SkillsOptions struct {
	Dirs     Dirs
	Clock    clock.Clock   // nil = clock.Real
	Debounce time.Duration // quiet time before a reload; 0 = 100 ms
	Logger   *slog.Logger  // nil = discard
	// OnChange is called after a reload that changed a skill or the set of
	// errors, from the watcher's goroutine, one call at a time. It may call
	// List and Get but not Close.
	OnChange func(SkillsChange)
}

// Skills holds the skills of a repository and, when watching, reloads them
// as files change: a new file loads, an edit reloads, a deletion unloads,
// and a broken file keeps the last good version while its error is
// reported. Workspace skills override global ones of the same name.
type Skills struct {
	opts SkillsOptions // defaults filled in

	mu     sync.RWMutex
	byName map[string]Skill // guarded by mu; the merged view
	errs   []*FileError     // guarded by mu; the files broken now
	// good and watch belong to whoever reloads: the constructor, then the
	// watcher goroutine.
	good   map[string]Skill  // by path: the last good version of each file
	watch  map[string]bool   // watched directories
	w      *fsnotify.Watcher // nil when not watching
	fire   chan struct{}     // buffered 1: the debounce timer fired
	done   chan struct{}     // closed by Close
	timer  clock.Timer       // watcher goroutine only
	wg     sync.WaitGroup
	closed sync.Once
}

// LoadSkills reads the skills of dirs once, without watching. Errors lists
// the files that could not be used.
func LoadSkills(d Dirs) *Skills {
	s := newSkills(SkillsOptions{Dirs: d})
	s.reload()
	return s
}

// WatchSkills reads the skills of dirs and keeps them up to date until
// Close. It watches directories rather than files (editors save by
// renaming), the skills directories and each skill's directory, and — while
// a skills directory does not exist — its nearest existing parent, so that
// creating it is noticed.
func WatchSkills(opts SkillsOptions) (*Skills, error) {
	s := newSkills(opts)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch skills: %w", err)
	}
	s.w = w
	s.reload()
	s.wg.Add(1)
	go s.run()
	return s, nil
}

func newSkills(opts SkillsOptions) *Skills {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Skills{
		opts:   opts,
		byName: map[string]Skill{}, good: map[string]Skill{}, watch: map[string]bool{},
		fire: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// Close stops watching and waits for the watcher goroutine to end.
func (s *Skills) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.done)
		s.wg.Wait()
		if s.w != nil {
			err = s.w.Close()
		}
	})
	return err
}

func (s *Skills) run() {
	defer s.wg.Done()
	defer func() {
		if s.timer != nil {
			s.timer.Stop()
		}
	}()
	for {
		select {
		case <-s.done:
			return
		case ev, ok := <-s.w.Events:
			if !ok {
				return
			}
			s.opts.Logger.Debug("skills: file event", "path", ev.Name, "op", ev.Op.String())
			s.arm()
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: reload to be sure.
			s.opts.Logger.Warn("skills: watcher error", "err", err)
			s.arm()
		case <-s.fire:
			if ch := s.reload(); ch != nil && s.opts.OnChange != nil {
				s.opts.OnChange(*ch)
			}
		}
	}
}

// arm (re)starts the debounce timer.
func (s *Skills) arm() {
	if s.timer == nil {
		s.timer = s.opts.Clock.AfterFunc(s.opts.Debounce, func() {
			select {
			case s.fire <- struct{}{}:
			default:
			}
		})
		return
	}
	s.timer.Reset(s.opts.Debounce)
}

type skillRoot struct {
	dir string
	src Source
}

func (s *Skills) roots() []skillRoot {
	var out []skillRoot
	// Global first: workspace skills are applied after and win.
	if s.opts.Dirs.Global != "" {
		out = append(out, skillRoot{filepath.Join(s.opts.Dirs.Global, "skills"), SourceGlobal})
	}
	if s.opts.Dirs.Workspace != "" {
		out = append(out, skillRoot{filepath.Join(s.opts.Dirs.Workspace, "skills"), SourceWorkspace})
	}
	return out
}

// reload rescans the skill directories, updates the watches and reports
// what changed (nil when nothing did).
func (s *Skills) reload() *SkillsChange {
	// Watch first, read after: a file written after its directory is
	// watched is seen by the next reload. Repeat until the directories hold
	// still, in case one appeared between listing and watching.
	var dirs []skillDir
	var errs []*FileError
	for range 3 {
		var want map[string]bool
		dirs, want, errs = s.scanDirs()
		if !s.syncWatches(want) {
			break
		}
	}
	found := map[string]Skill{} // by path, this scan
	seen := map[string]bool{}   // paths present this scan
	for _, d := range dirs {
		path := filepath.Join(d.dir, skillFile)
		if !exists(path) {
			continue // a directory without SKILL.md (yet) is not a skill
		}
		seen[path] = true
		data, err := readSmallFile(path)
		if err != nil {
			errs = append(errs, asFileError(path, err))
			continue
		}
		sk, err := parseSkill(path, data, d.src)
		if err != nil {
			errs = append(errs, asFileError(path, err))
			continue
		}
		found[path] = sk
	}

	// Keep the last good version of a file that broke; forget deleted files.
	for path := range s.good {
		if !seen[path] {
			delete(s.good, path)
		}
	}
	for path, sk := range found {
		s.good[path] = sk
	}
	merged := map[string]Skill{}
	for _, r := range s.roots() {
		for path, sk := range s.good {
			if sk.Source == r.src && filepath.Dir(filepath.Dir(path)) == r.dir {
				merged[sk.Name] = sk
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })

	s.mu.Lock()
	old, oldErrs := s.byName, s.errs
	s.byName, s.errs = merged, errs
	s.mu.Unlock()

	var ch SkillsChange
	for name, sk := range merged {
		if prev, ok := old[name]; !ok {
			ch.Added = append(ch.Added, name)
		} else if !sameSkill(prev, sk) {
			ch.Updated = append(ch.Updated, name)
		}
	}
	for name := range old {
		if _, ok := merged[name]; !ok {
			ch.Removed = append(ch.Removed, name)
		}
	}
	sort.Strings(ch.Added)
	sort.Strings(ch.Updated)
	sort.Strings(ch.Removed)
	ch.Errors = errs
	if len(ch.Added)+len(ch.Updated)+len(ch.Removed) == 0 && sameErrors(oldErrs, errs) {
		return nil
	}
	return &ch
}

type skillDir struct {
	dir string // <root>/<name>
	src Source
}

// scanDirs lists the skill directories and the directories to watch.
func (s *Skills) scanDirs() (dirs []skillDir, want map[string]bool, errs []*FileError) {
	want = map[string]bool{}
	for _, r := range s.roots() {
		items, err := os.ReadDir(r.dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if p := existingParent(r.dir, 2); p != "" {
					want[p] = true
				}
			} else {
				errs = append(errs, &FileError{Path: r.dir, Message: "cannot read the skills directory: " + pathErrText(err)})
			}
			continue
		}
		want[r.dir] = true
		for _, it := range items {
			if strings.HasPrefix(it.Name(), ".") {
				continue
			}
			dir := filepath.Join(r.dir, it.Name())
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			want[dir] = true
			dirs = append(dirs, skillDir{dir, r.src})
		}
	}
	return dirs, want, errs
}

// syncWatches makes the watched directories exactly want, and reports
// whether it added any.
func (s *Skills) syncWatches(want map[string]bool) (added bool) {
	if s.w == nil {
		return false
	}
	for dir := range s.watch {
		if !want[dir] {
			_ = s.w.Remove(dir) // fails when the directory is gone, which also ends the watch
			delete(s.watch, dir)
		}
	}
	for dir := range want {
		if s.watch[dir] {
			continue
		}
		if err := s.w.Add(dir); err != nil {
			s.opts.Logger.Warn("skills: cannot watch", "dir", dir, "err", err)
			continue
		}
		s.watch[dir] = true
		added = true
	}
	return added
}

// existingParent is the nearest existing ancestor of dir, at most up levels
// up ("" if none is).
func existingParent(dir string, up int) string {
	for i := 0; i < up; i++ {
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func asFileError(path string, err error) *FileError {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe
	}
	return &FileError{Path: path, Message: err.Error()}
}

func sameSkill(a, b Skill) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Mode == b.Mode &&
		slices.Equal(a.AllowedTools, b.AllowedTools) && a.Source == b.Source && a.Path == b.Path && a.Content == b.Content
}

func sameErrors(a, b []*FileError) bool {
	return slices.EqualFunc(a, b, func(x, y *FileError) bool { return *x == *y })
}

// List returns the skills by name (skills/list; Content is set too).
func (s *Skills) List() []Skill {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Skill, 0, len(s.byName))
	for _, sk := range s.byName {
		out = append(out, sk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns the skill named name (skills/get).
func (s *Skills) Get(name string) (Skill, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sk, ok := s.byName[name]
	return sk, ok
}

// Errors lists the skill files that cannot be used now.
func (s *Skills) Errors() []*FileError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.errs)
}

// Resolve returns the named skills in order, for a task's skills list. An
// unknown name fails with ErrNotFound naming it.
func (s *Skills) Resolve(names []string) ([]Skill, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Skill
	for _, n := range names {
		sk, ok := s.byName[n]
		if !ok {
			return nil, fmt.Errorf("%w: no skill named %q", ErrNotFound, n)
		}
		if !slices.ContainsFunc(out, func(x Skill) bool { return x.Name == n }) {
			out = append(out, sk)
		}
	}
	return out, nil
}
