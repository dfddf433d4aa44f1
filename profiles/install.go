package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A task's skills are installed in its claude session's own config dir
// (<config>/skills/<name>/SKILL.md), never in the worktree, where they would
// end up in the task's commits.
//
// Claude 2.1.330 watches that directory: a SKILL.md changed or added while
// the session runs is in its skill listing, and its body is what the Skill
// tool loads, from the first request made about 4 s after the write
// (measured: not after 3 s, always after 4 s; agent's
// TestInstalledSkillUpdateReachesRunningSession). So an update reaches a
// running task without restarting it, a few seconds late.

// InstallSkills makes configDir's skills exactly skills: stale ones from an
// earlier start go.
func InstallSkills(configDir string, skills []Skill) error {
	root := filepath.Join(configDir, "skills")
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("install skills: %w", err)
	}
	for _, sk := range skills {
		if err := installSkill(root, sk); err != nil {
			return err
		}
	}
	return nil
}

// InstalledSkills lists the skills installed in configDir.
func InstalledSkills(configDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(configDir, "skills"))
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// UpdateInstalled brings the skills installed in configDir up to date with a
// reload: an updated skill that is installed there is rewritten from its
// current file, a removed one is removed. Skills the task did not ask for are
// not added. It returns the names it changed.
func UpdateInstalled(configDir string, current *Skills, c SkillsChange) (changed []string, err error) {
	root := filepath.Join(configDir, "skills")
	installed := InstalledSkills(configDir)
	var errs []error
	for _, name := range c.Updated {
		if !slices.Contains(installed, name) {
			continue
		}
		sk, ok := current.Get(name)
		if !ok {
			continue
		}
		if err := installSkill(root, sk); err != nil {
			errs = append(errs, err)
			continue
		}
		changed = append(changed, name)
	}
	for _, name := range c.Removed {
		if !slices.Contains(installed, name) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			errs = append(errs, fmt.Errorf("remove installed skill %s: %w", name, err))
			continue
		}
		changed = append(changed, name)
	}
	return changed, errors.Join(errs...)
}

// installSkill writes one skill's file, by rename, so claude's watcher never
// reads half of it.
func installSkill(root string, sk Skill) error {
	dir := filepath.Join(root, sk.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	b, err := os.ReadFile(sk.Path)
	if err != nil {
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	tmp, err := os.CreateTemp(dir, ".SKILL-*.tmp")
	if err != nil {
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.Remove(tmp.Name())
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, skillFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	return nil
}
