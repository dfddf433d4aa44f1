package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

// The ACP Registry entry (editors/acp-registry/familiar) holds to the
// registry's agent.schema.json as published in agentclientprotocol/registry:
// id, name, version, description and a distribution are required; binary
// targets are named by the six platforms it knows, each an archive URL and
// a cmd; no other keys. The icon is a 16×16 SVG in currentColor only. The
// registry lists only agents that declare auth methods: TestACPV1Methods
// checks familiar's.
func TestACPRegistryManifest(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "editors", "acp-registry", "familiar")
	b, err := os.ReadFile(filepath.Join(dir, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var m struct {
		ID           string   `json:"id"`
		Name         string   `json:"name"`
		Version      string   `json:"version"`
		Description  string   `json:"description"`
		Repository   string   `json:"repository"`
		Website      string   `json:"website"`
		Authors      []string `json:"authors"`
		License      string   `json:"license"`
		LicenseURL   string   `json:"license_url"`
		Distribution struct {
			Binary map[string]struct {
				Archive string            `json:"archive"`
				SHA256  string            `json:"sha256"`
				Cmd     string            `json:"cmd"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"binary"`
		} `json:"distribution"`
	}
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("agent.json: %v", err)
	}
	if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(m.ID) || filepath.Base(dir) != m.ID {
		t.Errorf("id %q: lowercase and hyphens, and the directory's name", m.ID)
	}
	if m.Name == "" || m.Description == "" {
		t.Error("name and description are required")
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`).MatchString(m.Version) {
		t.Errorf("version %q is not semantic", m.Version)
	}
	platforms := map[string]bool{"darwin-aarch64": true, "darwin-x86_64": true, "linux-aarch64": true,
		"linux-x86_64": true, "windows-aarch64": true, "windows-x86_64": true}
	if len(m.Distribution.Binary) == 0 {
		t.Error("no binary distribution")
	}
	// The archives are the raw binaries `make dist` (.ci/dist) names
	// familiar-<goos>-<goarch>, released under the tag v<version>, the
	// extension's version that make dist stamps by default.
	var ext struct {
		Version string `json:"version"`
	}
	pj, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "editors", "vscode", "package.json"))
	if err != nil || json.Unmarshal(pj, &ext) != nil {
		t.Fatalf("editors/vscode/package.json: %v", err)
	}
	if m.Version != ext.Version {
		t.Errorf("version %s; make dist releases %s", m.Version, ext.Version)
	}
	goNames := map[string]string{"darwin-aarch64": "darwin-arm64", "darwin-x86_64": "darwin-amd64", "linux-aarch64": "linux-arm64",
		"linux-x86_64": "linux-amd64", "windows-aarch64": "windows-arm64", "windows-x86_64": "windows-amd64"}
	for p, tg := range m.Distribution.Binary {
		if !platforms[p] {
			t.Errorf("platform %q is not one the registry knows", p)
		}
		if want := "/v" + m.Version + "/familiar-" + goNames[p]; !strings.HasSuffix(tg.Archive, want) || tg.Cmd != "./familiar-"+goNames[p] {
			t.Errorf("%s: archive %q, cmd %q; make dist names it familiar-%s", p, tg.Archive, tg.Cmd, goNames[p])
		}
		if !strings.HasPrefix(tg.Archive, "https://") || !strings.Contains(tg.Archive, m.Version) || tg.Cmd == "" {
			t.Errorf("%s: archive %q (https, of version %s) and cmd %q", p, tg.Archive, m.Version, tg.Cmd)
		}
		if len(tg.Args) != 1 || tg.Args[0] != "acp" {
			t.Errorf("%s: args %v; the registry starts `familiar acp`", p, tg.Args)
		}
	}
	icon, err := os.ReadFile(filepath.Join(dir, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(icon)
	if !strings.Contains(s, `width="16"`) || !strings.Contains(s, `height="16"`) {
		t.Error("icon.svg is not 16×16")
	}
	for _, fill := range regexp.MustCompile(`(?:fill|stroke)="([^"]*)"`).FindAllStringSubmatch(s, -1) {
		if fill[1] != "currentColor" && fill[1] != "none" {
			t.Errorf("icon.svg has a colour of its own: %s", fill[0])
		}
	}
}
