package repoconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/repoconfig"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     repoconfig.Config
		err      string
	}{
		{"empty", "", repoconfig.Config{}, ""},
		{"comments only", "# nothing yet\n", repoconfig.Config{}, ""},
		{"both", "mergeVerify: make test\ntestCommands: [go test ./..., go vet ./...]\n",
			repoconfig.Config{MergeVerify: "make test", TestCommands: []string{"go test ./...", "go vet ./..."}}, ""},
		{"a misspelt key", "mergeVerify: make test\nmergeVerfy: make lint\n", repoconfig.Config{},
			`c.yaml:2: unknown key "mergeVerfy" (known: mergeVerify, testCommands)`},
		{"a key of another file", "concurrency: 2\n", repoconfig.Config{},
			`c.yaml:1: unknown key "concurrency" (known: mergeVerify, testCommands)`},
		{"duplicate", "mergeVerify: a\nmergeVerify: b\n", repoconfig.Config{},
			`c.yaml:2: duplicate key "mergeVerify" (first at line 1)`},
		{"a list", "- mergeVerify\n", repoconfig.Config{},
			`c.yaml:1: the file must be a mapping of keys (mergeVerify, testCommands)`},
		{"wrong type", "testCommands: make test\n", repoconfig.Config{}, `c.yaml: has a value of the wrong type: line 1:`},
		{"broken YAML", "mergeVerify: [\n", repoconfig.Config{}, `c.yaml: is not valid YAML: `},
	} {
		got, err := repoconfig.Parse("c.yaml", []byte(c.in))
		if c.err == "" {
			if err != nil || !slices.Equal(got.TestCommands, c.want.TestCommands) || got.MergeVerify != c.want.MergeVerify {
				t.Errorf("%s: Parse = %+v, %v; want %+v", c.name, got, err, c.want)
			}
			continue
		}
		var re *repoconfig.Error
		if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%s: error %v; want one starting %q", c.name, err, c.err)
		}
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	if cfg, err := repoconfig.Load(root); err != nil || cfg.MergeVerify != "" {
		t.Fatalf("no file: %+v, %v", cfg, err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".familiar"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(repoconfig.Path(root), []byte("mergeVerfy: make test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := repoconfig.Load(root)
	want := filepath.Join(root, ".familiar", "config.yaml") + `:1: unknown key "mergeVerfy"`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load: %v; want %s…", err, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("mergeVerify: make test\ntestCommands: [a]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = repoconfig.Parse("c.yaml", b)
	})
}
