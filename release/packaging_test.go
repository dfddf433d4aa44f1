package release_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/release"
)

// TestHomebrewFormula renders packaging/homebrew/familiar.rb as make dist
// does (.ci/dist: the version and each archive's sha256 for the @…@
// tokens) and checks what brew audit --strict checks that can be checked
// here: Ruby syntax (ruby -c), a desc that does not start with an article
// or the name and fits 80 characters, an https homepage, the licence, one
// https URL and sha256 per platform make dist builds, named as it names the
// archives, no version that repeats the URL's, and a test block.
func TestHomebrewFormula(t *testing.T) {
	root := testenv.RepoRoot()
	tmpl := read(t, root, "packaging/homebrew/familiar.rb")
	dist := read(t, root, ".ci/dist")
	rb := strings.ReplaceAll(tmpl, "@VERSION@", release.Version)
	archives := map[string]string{"DARWIN_ARM64": "darwin-arm64", "DARWIN_AMD64": "darwin-amd64", "LINUX_ARM64": "linux-arm64", "LINUX_AMD64": "linux-amd64"}
	for token, platform := range archives {
		if !strings.Contains(dist, "@SHA256_"+token+"@/$(sum familiar-"+platform+".tar.gz)") {
			t.Errorf(".ci/dist does not fill @SHA256_%s@ with familiar-%s.tar.gz's sum", token, platform)
		}
		rb = strings.ReplaceAll(rb, "@SHA256_"+token+"@", strings.Repeat("ab", 32))
	}
	if !strings.Contains(dist, `"dist/familiar-$goos-$goarch.tar.gz"`) {
		t.Error(".ci/dist no longer makes dist/familiar-<os>-<arch>.tar.gz")
	}
	if tok := regexp.MustCompile(`@[A-Z0-9_]+@`).FindString(rb); tok != "" {
		t.Errorf("the rendered formula keeps %s: make dist would leave it too", tok)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^  ` + name + ` "([^"]*)"`).FindStringSubmatch(rb)
		if m == nil {
			t.Errorf("the formula has no %s", name)
			return ""
		}
		return m[1]
	}
	desc := field("desc")
	if len(desc) > 80 || regexp.MustCompile(`(?i)^(a|an|the|familiar)\b`).MatchString(desc) || strings.HasSuffix(desc, ".") {
		t.Errorf("desc %q: at most 80 characters, no article or name first, no full stop", desc)
	}
	if h := field("homepage"); !strings.HasPrefix(h, "https://") {
		t.Errorf("homepage %q", h)
	}
	if l := field("license"); l != "Apache-2.0" {
		t.Errorf("license %q", l)
	}
	if regexp.MustCompile(`(?m)^\s+version "`).MatchString(rb) {
		t.Error("the formula says a version the URLs already give (brew audit: redundant)")
	}
	urls := regexp.MustCompile(`url "([^"]+)"\n\s+sha256 "([0-9a-f]{64})"`).FindAllStringSubmatch(rb, -1)
	if len(urls) != len(archives) {
		t.Errorf("%d url/sha256 pairs, want %d (one per platform make dist builds)", len(urls), len(archives))
	}
	for _, u := range urls {
		if !regexp.MustCompile(`^https://github\.com/familiar-dev/familiar/releases/download/v` + regexp.QuoteMeta(release.Version) + `/familiar-(darwin|linux)-(arm64|amd64)\.tar\.gz$`).MatchString(u[1]) {
			t.Errorf("url %s is not a release archive of v%s as make dist names them", u[1], release.Version)
		}
	}
	if !strings.Contains(rb, "\n  test do\n") || !strings.Contains(rb, `bin.install "familiar"`) {
		t.Error("the formula needs an install that puts familiar in bin and a test block")
	}

	ruby, err := exec.LookPath("ruby")
	if err != nil {
		testenv.Missing(t, "ruby is not installed (apt-get install ruby): the formula's syntax is not checked")
	}
	f := filepath.Join(t.TempDir(), "familiar.rb")
	if err := os.WriteFile(f, []byte(rb), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ruby, "-c", f).CombinedOutput(); err != nil {
		t.Errorf("ruby -c: %v\n%s", err, out)
	}
}
