package release_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

// TestExtensionPublishable checks, without the network, what vsce package
// and the Marketplace (and Open VSX) want of the extension, so make vsix
// stays at 0 warnings: the manifest's fields, an icon that is a PNG of at
// least 128×128 (SVG icons are refused), a README whose links work outside
// the repository (absolute, no SVG images), a changelog and a licence, and
// that the package ships them.
func TestExtensionPublishable(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "editors", "vscode")
	var pj struct {
		Name, DisplayName, Description, Version, Publisher, License, Icon, Homepage string
		Main                                                                        string
		Pricing                                                                     string
		GalleryBanner                                                               struct{ Color, Theme string }
		Repository                                                                  struct{ Type, URL string }
		Bugs                                                                        struct{ URL string }
		Categories, Keywords                                                        []string
		Scripts                                                                     map[string]string
		Engines                                                                     map[string]string
	}
	if err := json.Unmarshal([]byte(read(t, dir, "package.json")), &pj); err != nil {
		t.Fatal(err)
	}
	for field, v := range map[string]string{"name": pj.Name, "displayName": pj.DisplayName, "description": pj.Description,
		"publisher": pj.Publisher, "main": pj.Main, "repository.url": pj.Repository.URL, "homepage": pj.Homepage,
		"bugs.url": pj.Bugs.URL, "galleryBanner.color": pj.GalleryBanner.Color, "engines.vscode": pj.Engines["vscode"],
		"scripts[vscode:prepublish]": pj.Scripts["vscode:prepublish"]} {
		if v == "" {
			t.Errorf("package.json: %s is empty", field)
		}
	}
	if pj.License != "Apache-2.0" {
		t.Errorf("package.json: license %q, want Apache-2.0", pj.License)
	}
	for _, u := range []string{pj.Repository.URL, pj.Homepage, pj.Bugs.URL} {
		if !strings.HasPrefix(u, "https://") {
			t.Errorf("package.json: %q is not an https URL", u)
		}
	}
	if !slices.Contains([]string{"dark", "light"}, pj.GalleryBanner.Theme) {
		t.Errorf("package.json: galleryBanner.theme %q", pj.GalleryBanner.Theme)
	}
	// vsce's categories (its validation list); keywords at most 30.
	known := []string{"AI", "Azure", "Chat", "Data Science", "Debuggers", "Education", "Extension Packs", "Formatters",
		"Keymaps", "Language Packs", "Linters", "Machine Learning", "Notebooks", "Other", "Programming Languages",
		"SCM Providers", "Snippets", "Testing", "Themes", "Visualization"}
	if len(pj.Categories) == 0 {
		t.Error("package.json: no categories")
	}
	for _, c := range pj.Categories {
		if !slices.Contains(known, c) {
			t.Errorf("package.json: category %q is not one vsce knows", c)
		}
	}
	if len(pj.Keywords) == 0 || len(pj.Keywords) > 30 {
		t.Errorf("package.json: %d keywords (1 to 30)", len(pj.Keywords))
	}
	if !strings.HasSuffix(pj.Icon, ".png") {
		t.Errorf("package.json: icon %q is not a PNG", pj.Icon)
	} else if b, err := os.ReadFile(filepath.Join(dir, pj.Icon)); err != nil {
		t.Error(err)
	} else if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		t.Errorf("%s: %v", pj.Icon, err)
	} else if cfg.Width < 128 || cfg.Width != cfg.Height {
		t.Errorf("%s is %d×%d: the Marketplace wants a square of at least 128", pj.Icon, cfg.Width, cfg.Height)
	}

	readme := read(t, dir, "README.md")
	for _, m := range regexp.MustCompile(`\]\(([^)\s]+)`).FindAllStringSubmatch(readme, -1) {
		if !strings.HasPrefix(m[1], "https://") && !strings.HasPrefix(m[1], "#") {
			t.Errorf("README.md links to %q: the Marketplace shows it outside the repository, so links are absolute https", m[1])
		}
	}
	// Its pictures are the repository's own (taken by the UI tests,
	// FAMILIAR_UI_SHOTS_DIR): each one it shows is there.
	const raw = "https://raw.githubusercontent.com/familiar-dev/familiar/main/editors/vscode/"
	for _, m := range regexp.MustCompile(`!\[[^\]]*\]\(([^)\s]+)\)`).FindAllStringSubmatch(readme, -1) {
		if rel, ok := strings.CutPrefix(m[1], raw); ok {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
				t.Errorf("README.md shows %s, which is not in the repository", rel)
			}
		}
	}
	if regexp.MustCompile(`(?i)!\[[^\]]*\]\([^)]*\.svg\)|<img[^>]+\.svg`).MatchString(readme) {
		t.Error("README.md shows an SVG image, which vsce refuses")
	}
	read(t, dir, "CHANGELOG.md")
	read(t, dir, "LICENSE")

	// .vscodeignore lists what ships (everything else is ignored).
	ignore := read(t, dir, ".vscodeignore")
	for _, want := range []string{"!package.json", "!README.md", "!CHANGELOG.md", "!LICENSE", "!ThirdPartyNotices.txt", "!dist/extension.js", "!media/**", "!schemas/**"} {
		if !strings.Contains(ignore, want+"\n") {
			t.Errorf(".vscodeignore does not ship %s", strings.TrimPrefix(want, "!"))
		}
	}
	// media/ ships whole: nothing unused in it.
	entries, err := os.ReadDir(filepath.Join(dir, "media"))
	if err != nil {
		t.Fatal(err)
	}
	used := read(t, dir, "package.json")
	src, _ := filepath.Glob(filepath.Join(dir, "src", "*.ts"))
	for _, f := range src {
		b, _ := os.ReadFile(f)
		used += string(b)
	}
	for _, e := range entries {
		if !strings.Contains(used, e.Name()) && e.Name() != "icon.svg" { // icon.svg: the PNG's source
			t.Errorf("media/%s ships in every VSIX but neither package.json nor src/ names it", e.Name())
		}
	}
}
