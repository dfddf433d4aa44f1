package schema_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/repoconfig"
	"github.com/familiar-dev/familiar/runfile"
	"github.com/familiar-dev/familiar/schema"
)

var update = flag.Bool("update", false, "rewrite editors/vscode/schemas from the Go types")

const (
	module = "github.com/familiar-dev/familiar"
	outDir = "editors/vscode/schemas"
	idBase = "https://raw.githubusercontent.com/familiar-dev/familiar/main/editors/vscode/schemas/"
)

// generate makes the four schemas: name → JSON.
func generate(t *testing.T) map[string][]byte {
	root := testenv.RepoRoot()
	dirs := map[string]string{}
	for _, p := range []string{"protocol", "runfile", "repoconfig", "profiles"} {
		dirs[module+"/"+p] = filepath.Join(root, p)
	}
	src, err := schema.ReadSource(dirs)
	if err != nil {
		t.Fatal(err)
	}
	g := &schema.Generator{Source: src, Options: schema.Options{
		Required: map[reflect.Type][]string{
			reflect.TypeFor[protocol.TaskCreateParams](): {"title", "description"},
			reflect.TypeFor[runfile.Task]():              {"title", "description"},
			reflect.TypeFor[runfile.Document]():          {"tasks"},
		},
		Enums: map[string][]string{
			"Frontmatter.TaskTypes": profiles.TaskTypes,
			"Frontmatter.Mode":      profiles.Modes,
			"fileSettings.Sandbox":  {protocol.SandboxOn, protocol.SandboxOff, protocol.SandboxRequired},
			"fileSettings.Merge":    {runfile.MergeQueue},
		},
		// task/prepare's agent is an editor's (runfile refuses the key).
		Omit: map[string]bool{"TaskCreateParams.Prepared": true},
	}}
	out := map[string]map[string]any{}

	// A tasks file is {settings, tasks} or just the list of tasks.
	doc := g.Of(reflect.TypeFor[runfile.Document]())
	tasks := g.Of(reflect.TypeFor[[]protocol.TaskCreateParams]())
	tasks["minItems"] = 1
	doc["properties"].(map[string]any)["tasks"].(map[string]any)["minItems"] = 1
	out["tasks"] = map[string]any{
		"$schema": "http://json-schema.org/draft-07/schema#", "$id": idBase + "tasks.schema.json",
		"title":       "familiar tasks file",
		"description": "The tasks `familiar run FILE` runs headless: run settings and a list of tasks (each the params of task/create), or just the list.",
		"anyOf":       []any{doc, tasks},
	}
	out["config"] = g.Document(idBase+"config.schema.json", "familiar repository config",
		"A repository's .familiar/config.yaml: what a team keeps with its code for familiar. Settings win over it; an unknown key is an error.",
		reflect.TypeFor[repoconfig.Config]())
	out["profile"] = g.Document(idBase+"profile.schema.json", "familiar profile frontmatter",
		"The YAML frontmatter of a familiar profile (.familiar/profiles/NAME.md): a prompt template with the tool rules and default mode for a kind of work.",
		reflect.TypeFor[profiles.Frontmatter]())
	out["policy"] = g.Document(idBase+"policy.schema.json", "familiar permission policy",
		"What agents may do without asking (the familiar.policyFile of VS Code, permissionPolicy in a tasks file): a default for tool uses no rule matches, and Claude permission rules such as Bash(go test:*), Read or Edit; a deny rule wins.",
		reflect.TypeFor[protocol.Policy]())

	if len(g.Missing) > 0 {
		t.Errorf("fields without a doc comment, so without a description in their schema: %s (write one where the field is declared)",
			strings.Join(g.Missing, ", "))
	}
	files := map[string][]byte{}
	for name, s := range out {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		files[name+".schema.json"] = b.Bytes()
	}
	return files
}

// TestSchemas: the committed schemas are what the Go types make (-update
// rewrites them), and every field of the four files is described.
func TestSchemas(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), outDir)
	files := generate(t)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale (%v): regenerate with go test ./schema -run TestSchemas -update", outDir, name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if files[e.Name()] == nil {
			t.Errorf("%s/%s is made by nothing: remove it", outDir, e.Name())
		}
	}
}

// TestSchemasContributed: the extension contributes every schema, JSON
// files through jsonValidation and YAML ones through yamlValidation (the
// association the Red Hat YAML extension reads), and ships them.
func TestSchemasContributed(t *testing.T) {
	root := testenv.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "editors", "vscode", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Contributes struct {
			JSONValidation []struct {
				FileMatch []string `json:"fileMatch"`
				URL       string   `json:"url"`
			} `json:"jsonValidation"`
			YAMLValidation []struct {
				FileMatch []string `json:"fileMatch"`
				URL       string   `json:"url"`
			} `json:"yamlValidation"`
		} `json:"contributes"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		t.Fatal(err)
	}
	contributed := map[string]bool{}
	for _, v := range pj.Contributes.JSONValidation {
		contributed[strings.TrimPrefix(v.URL, "./schemas/")] = true
	}
	for _, v := range pj.Contributes.YAMLValidation {
		contributed[strings.TrimPrefix(v.URL, "./schemas/")] = true
		for _, m := range v.FileMatch {
			if strings.HasSuffix(m, ".json") {
				t.Errorf("yamlValidation matches %s, a JSON file", m)
			}
		}
	}
	for name := range generate(t) {
		// A profile is Markdown (.familiar/profiles/NAME.md), whose
		// frontmatter neither VS Code nor the YAML extension validates:
		// its schema ships for editors and tools that do.
		if !contributed[name] && name != "profile.schema.json" {
			t.Errorf("package.json contributes no validation with %s", name)
		}
	}
	for _, want := range []string{"config.schema.json", "tasks.schema.json"} {
		found := false
		for _, v := range pj.Contributes.YAMLValidation {
			found = found || strings.HasSuffix(v.URL, want)
		}
		if !found {
			t.Errorf("yamlValidation lacks %s", want)
		}
	}
}
