package acp_test

import (
	"encoding/json"
	"encoding/xml"
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
	// The rest of the registry's validator (build_registry.py in
	// agentclientprotocol/registry), rule by rule. Left to release time,
	// because they need the network: that each archive URL answers (the
	// release must be published first).
	if m.Repository == "" || m.License != "Apache-2.0" || len(m.Authors) == 0 {
		t.Errorf("repository %q, license %q, authors %v: say where, under what and by whom", m.Repository, m.License, m.Authors)
	}
	for _, a := range m.Authors {
		if a != "The familiar authors" {
			t.Errorf("author %q: the entry names no person", a)
		}
	}
	for _, u := range []string{m.Repository, m.Website, m.LicenseURL} {
		if u != "" && !strings.HasPrefix(u, "https://") {
			t.Errorf("%q is not a URI the schema's format accepts", u)
		}
	}
	families := map[string]bool{}
	for p, tg := range m.Distribution.Binary {
		families[strings.Split(p, "-")[0]] = true
		lower := strings.ToLower(tg.Archive)
		for _, ext := range []string{".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"} {
			if strings.HasSuffix(lower, ext) {
				t.Errorf("%s: archive %s is an installer (%s), which the registry refuses", p, tg.Archive, ext)
			}
		}
		if strings.Contains(tg.Archive, "/latest/") {
			t.Errorf("%s: archive %s says /latest/, not its version", p, tg.Archive)
		}
		if v := regexp.MustCompile(`/(?:download|releases)/v?([\d.]+)/`).FindStringSubmatch(tg.Archive); v != nil && v[1] != m.Version {
			t.Errorf("%s: archive of version %s, the entry says %s", p, v[1], m.Version)
		}
		// make dist fills each sha256 in the entry it writes
		// (dist/acp-registry); one written here must be well formed.
		if tg.SHA256 != "" && !regexp.MustCompile(`^[a-fA-F0-9]{64}$`).MatchString(tg.SHA256) {
			t.Errorf("%s: sha256 %q is not 64 hex digits", p, tg.SHA256)
		}
	}
	for _, f := range []string{"darwin", "linux", "windows"} {
		if !families[f] {
			// The validator prints a warning, not an error: familiar runs
			// on Windows inside WSL only.
			t.Logf("warning (as the registry's validator says): no build for %s", f)
		}
	}

	icon, err := os.ReadFile(filepath.Join(dir, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	checkRegistryIcon(t, icon)
}

// checkRegistryIcon holds icon.svg to the registry's rules: XML whose root
// is <svg>, no comments, square and 16×16 (width and height, else the
// viewBox), monochrome: every fill and stroke (attribute, style or <style>)
// currentColor, none or inherit, and currentColor used at least once.
func checkRegistryIcon(t *testing.T, icon []byte) {
	t.Helper()
	s := string(icon)
	if strings.Contains(s, "<!--") {
		t.Error("icon.svg has a comment, which breaks the registry's MDX pages")
	}
	type attrs = []xml.Attr
	dec := xml.NewDecoder(strings.NewReader(s))
	root := true
	current := false
	allowed := map[string]bool{"currentcolor": true, "none": true, "inherit": true}
	colour := func(where, v string) {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "currentcolor" {
			current = true
		} else if !allowed[v] {
			t.Errorf("icon.svg has a colour of its own: %s %q", where, v)
		}
	}
	inStyle := false
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("icon.svg is not XML: %v", err)
			}
			break
		}
		switch el := tok.(type) {
		case xml.StartElement:
			get := func(name string) string {
				for _, a := range attrs(el.Attr) {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			if root {
				root = false
				if el.Name.Local != "svg" {
					t.Fatalf("icon.svg's root is <%s>, not <svg>", el.Name.Local)
				}
				w, h := get("width"), get("height")
				if w == "" || h == "" {
					if vb := strings.Fields(get("viewBox")); len(vb) == 4 {
						w, h = vb[2], vb[3]
					}
				}
				if strings.TrimSuffix(w, "px") != "16" || strings.TrimSuffix(h, "px") != "16" {
					t.Errorf("icon.svg is %s×%s, not 16×16", w, h)
				}
			}
			for _, name := range []string{"fill", "stroke"} {
				if v := get(name); v != "" {
					colour(name, v)
				}
			}
			for _, decl := range strings.Split(get("style"), ";") {
				if k, v, ok := strings.Cut(decl, ":"); ok && (strings.TrimSpace(k) == "fill" || strings.TrimSpace(k) == "stroke") {
					colour("style "+k, v)
				}
			}
			inStyle = el.Name.Local == "style"
		case xml.CharData:
			if inStyle {
				for _, m := range regexp.MustCompile(`(?i)\b(fill|stroke)\s*:\s*([^;}\s]+)`).FindAllStringSubmatch(string(el), -1) {
					colour("<style> "+m[1], m[2])
				}
			}
		case xml.EndElement:
			inStyle = false
		}
	}
	if !current {
		t.Error("icon.svg never uses currentColor, which the registry wants for theming")
	}
}
