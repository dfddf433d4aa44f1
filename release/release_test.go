package release_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/release"
)

// TestVersionsAgree: release.Version is the one source; the extension, its
// lock file, the ACP Registry entry (and the release URLs it names) and the
// changelogs say the same.
func TestVersionsAgree(t *testing.T) {
	if !regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`).MatchString(release.Version) {
		t.Fatalf("release.Version %q is not a semantic version MAJOR.MINOR.PATCH", release.Version)
	}
	root := testenv.RepoRoot()
	jsonVersion := func(name string, path ...string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		s, _ := v.(string)
		return s
	}
	for _, c := range []struct {
		file string
		path []string
	}{
		{"editors/vscode/package.json", []string{"version"}},
		{"editors/vscode/package-lock.json", []string{"version"}},
		{"editors/vscode/package-lock.json", []string{"packages", "", "version"}},
		{"editors/acp-registry/familiar/agent.json", []string{"version"}},
	} {
		if got := jsonVersion(c.file, c.path...); got != release.Version {
			t.Errorf("%s %v is %q; release.Version is %s", c.file, c.path, got, release.Version)
		}
	}
	agent, err := os.ReadFile(filepath.Join(root, "editors/acp-registry/familiar/agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range regexp.MustCompile(`releases/download/([^/"]+)/`).FindAllStringSubmatch(string(agent), -1) {
		if u[1] != "v"+release.Version {
			t.Errorf("agent.json names the release %s; release.Version is %s", u[1], release.Version)
		}
	}
	for _, name := range []string{"CHANGELOG.md", "editors/vscode/CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "## ["+release.Version+"]") {
			t.Errorf("%s has no section ## [%s]", name, release.Version)
		}
	}
}

func TestBuildVersion(t *testing.T) {
	dev := release.Version + "-dev"
	info := func(v string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/familiar-dev/familiar", Version: v}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	for _, c := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"stamped by make dist", "0.2.0+1a2b3c4d5e6f", info("v0.2.0"), "0.2.0+1a2b3c4d5e6f"},
		{"go install at a tag", "dev", info("v0.2.0"), "0.2.0"},
		{"go install of a pre-release", "dev", info("v0.3.0-rc.1"), "0.3.0-rc.1"},
		{"go build in a checkout without tags", "dev", info("v0.0.0-20261128203500-1a2b3c4d5e6f+dirty",
			"vcs.revision", "1a2b3c4d5e6f7a8b9c0d", "vcs.modified", "true"), dev + "+1a2b3c4d5e6f-dirty"},
		{"go build with -buildvcs=false", "dev", info("(devel)"), dev},
		{"go run", "", info(""), dev},
		{"no build info", "dev", nil, dev},
	} {
		if got := release.BuildVersion(c.stamped, c.info); got != c.want {
			t.Errorf("%s: BuildVersion = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestNoticesCarried: the binary's notices name every linked module and say
// familiar's own licence.
func TestNoticesCarried(t *testing.T) {
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "The familiar authors",
		"go.yaml.in/yaml/v3", "vscode-jsonrpc"} {
		if !strings.Contains(release.Notices, want) {
			t.Errorf("the embedded notices lack %q", want)
		}
	}
}
