package profiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestUpdateInstalledSkills(t *testing.T) {
	ws := t.TempDir()
	write := func(name, body string) {
		d := filepath.Join(ws, "skills", name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: d\n---\n"+body+"\n"), 0o644)
	}
	write("notes", "v1")
	write("other", "v1")
	s := LoadSkills(Dirs{Workspace: ws})
	notes, _ := s.Resolve([]string{"notes"})
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "skills", "stale"), 0o700)
	if err := InstallSkills(cfg, notes); err != nil {
		t.Fatal(err)
	}
	if got := InstalledSkills(cfg); !slices.Equal(got, []string{"notes"}) {
		t.Fatalf("installed %q", got)
	}
	write("notes", "v2")
	write("other", "v2")
	s = LoadSkills(Dirs{Workspace: ws})
	changed, err := UpdateInstalled(cfg, s, SkillsChange{Updated: []string{"notes", "other"}})
	if err != nil || !slices.Equal(changed, []string{"notes"}) {
		t.Fatalf("changed %q, %v", changed, err)
	}
	b, _ := os.ReadFile(filepath.Join(cfg, "skills", "notes", "SKILL.md"))
	if string(b) != "---\nname: notes\ndescription: d\n---\nv2\n" {
		t.Errorf("installed copy = %q", b)
	}
	// A skill the task did not ask for is not installed by an update.
	if _, err := os.Stat(filepath.Join(cfg, "skills", "other")); err == nil {
		t.Error("an update installed a skill the task did not ask for")
	}
	changed, err = UpdateInstalled(cfg, s, SkillsChange{Removed: []string{"notes"}})
	if err != nil || !slices.Equal(changed, []string{"notes"}) || len(InstalledSkills(cfg)) != 0 {
		t.Fatalf("remove: %q %v, left %q", changed, err, InstalledSkills(cfg))
	}
}
