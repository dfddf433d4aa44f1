package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

const module = "github.com/familiar-dev/familiar"

// domain lists familiar's production packages (relative to the module).
var domain = []string{
	"agent", "agent/screen", "batch", "bench", "clock", "demo", "demomodel", "doctor",
	"jsonrpc", "mask", "mcp", "orchestrator", "policy", "procs", "profiles", "protocol",
	"runfile", "store", "worktree", "cmd/familiar", "procs/procfs", "mailbox",
	"acp", "agent/closing", "agent/transcript", "daemon", "grants", "texts",
	"procs/proctable", "dirs", "protocol/tsgen", "protocol/gogen", "rpcclient", "errkind", "workspace",
	"mergequeue", "sandbox", "release", "repoconfig", "schema", "plan",
}

// except returns every domain package but the ones given.
func except(keep ...string) []string {
	var out []string
	for _, p := range domain {
		if !slices.Contains(keep, p) {
			out = append(out, p)
		}
	}
	return out
}

// mustNot is DESIGN.md's "must not" columns as imports: a package may not
// import (directly) any package listed for it.
var mustNot = map[string][]string{
	"clock":        except("clock"),
	"mask":         except("mask", "clock"),
	"protocol":     except("protocol", "errkind"),
	"errkind":      except("errkind"),
	"policy":       except("policy"),
	"demomodel":    except("demomodel"),
	"agent/screen": except("agent/screen", "clock"),
	"store":        except("store", "clock", "procs/proctable", "errkind"),
	"procs":        except("procs", "clock", "procs/proctable"),
	"procs/procfs": except("procs/procfs"),
	// The process table: /proc through procfs on Linux, sysctl on macOS.
	"procs/proctable": except("procs/proctable", "procs/procfs"),
	"dirs":            except("dirs"),
	// The generator of the extension's protocol.ts reads protocol's types only.
	"protocol/tsgen": except("protocol/tsgen", "protocol"),
	// The generator of the Go code each method needs reads protocol's source.
	"protocol/gogen": except("protocol/gogen", "protocol"),
	"mailbox":        except("mailbox"),
	// acp speaks ACP on one side and familiar's protocol on the other: a
	// client of the daemon like an editor, nothing of the engine.
	"acp": except("acp", "protocol", "rpcclient"),
	// The one client of familiar's JSON-RPC speaks protocol's types only.
	"rpcclient":     except("rpcclient", "protocol"),
	"agent/closing": except("agent/closing"),
	// The transcript is read into the protocol's entry types, which the
	// orchestrator masks and clips (DESIGN.md, "Decisions changed").
	"agent/transcript": except("agent/transcript", "protocol"),
	"daemon":           except("daemon", "clock", "protocol", "jsonrpc", "rpcclient", "procs/proctable"),
	"grants":           except("grants", "policy", "dirs"),
	"texts":            except("texts"),
	"sandbox":          except("sandbox"),
	"runfile":          except("runfile", "protocol", "plan"),
	// The merge queue drives tasks through its Host (the orchestrator) and
	// git through Integration (worktree's types); its verify command runs
	// under procs.
	"mergequeue": except("mergequeue", "protocol", "worktree", "procs", "clock", "errkind", "procs/proctable"),
	"plan":       except("plan", "protocol", "clock"),
	"release":    except("release"),
	"repoconfig": except("repoconfig"),
	// The schemas' generator reads Go types through reflection and source;
	// its test names the types.
	"schema":   except("schema"),
	"jsonrpc":  {"procs", "worktree", "agent", "agent/screen", "store", "orchestrator", "workspace", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	"agent":    {"store", "worktree", "orchestrator", "workspace", "jsonrpc", "profiles", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	"worktree": {"agent", "agent/screen", "orchestrator", "workspace", "store", "jsonrpc", "procs", "profiles", "mcp", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	"profiles": {"procs", "agent", "agent/screen", "worktree", "store", "orchestrator", "workspace", "jsonrpc", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	"mcp":      {"orchestrator", "workspace", "store", "agent", "agent/screen", "worktree", "jsonrpc", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	// The engine is built by the composition root (workspace), never the
	// other way round.
	"orchestrator": {"jsonrpc", "workspace", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	// The composition root opens what the engine needs and serves the
	// protocol over it; the transport and the front ends are above it.
	"workspace": {"jsonrpc", "batch", "bench", "demo", "doctor", "cmd/familiar"},
	"batch":     {"jsonrpc", "store", "agent", "procs", "bench", "demo", "doctor", "cmd/familiar"},
	"demo":      {"jsonrpc", "store", "bench", "doctor", "cmd/familiar"},
	"doctor":    {"jsonrpc", "batch", "bench", "demo", "cmd/familiar"},
	"bench":     {"batch", "demo", "doctor", "cmd/familiar"}, // measures through the JSON-RPC socket too
}

// forbiddenInBinary are packages the production binary must not link.
var forbiddenInBinary = []string{"net/http/httptest", "testing", "testing/fstest", "testing/iotest"}

type pkg struct {
	ImportPath   string
	Dir          string
	Imports      []string
	Deps         []string
	TestGoFiles  []string
	XTestGoFiles []string
}

// list runs go list over the whole module.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go tool is not in PATH")
	}
	cmd := exec.Command(goTool, append([]string{"list", "-json=ImportPath,Dir,Imports,Deps,TestGoFiles,XTestGoFiles"}, args...)...)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestImportsFollowDesign checks every production package's direct imports
// against mustNot, and that only tests import internal/ helpers.
func TestImportsFollowDesign(t *testing.T) {
	pkgs := list(t, "./...")
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		seen[name] = true
		if strings.HasPrefix(name, "internal/") {
			continue // test helpers may use anything
		}
		if !slices.Contains(domain, name) {
			t.Errorf("package %s is not in this test's list of domain packages: add it (and its must-not rules) here and to docs/DESIGN.md", name)
		}
		for _, imp := range p.Imports {
			dep, ok := rel(imp)
			if !ok {
				continue
			}
			if strings.HasPrefix(dep, "internal/") {
				t.Errorf("%s imports the test helper %s: internal/ is for tests only (docs/DESIGN.md)", name, dep)
			}
			if slices.Contains(mustNot[name], dep) {
				t.Errorf("%s imports %s, which docs/DESIGN.md says it must not", name, dep)
			}
		}
	}
	for name := range mustNot {
		if !seen[name] {
			t.Errorf("rule for %s, which is not a package any more: update this test and docs/DESIGN.md", name)
		}
	}
}

// TestEngineStartsNoProcessItself: process work belongs to procs (issue
// 38): the orchestrator, the merge queue and the planner import neither os/exec nor
// syscall, so every process they start is one procs supervises, whose tree
// ends with it.
func TestEngineStartsNoProcessItself(t *testing.T) {
	for _, p := range list(t, "./orchestrator", "./mergequeue", "./plan") {
		for _, imp := range p.Imports {
			if imp == "os/exec" || imp == "syscall" {
				t.Errorf("%s imports %s: start processes through procs", p.ImportPath, imp)
			}
		}
	}
}

// TestBinaryLinksNoTestHelpers checks `go list -deps ./cmd/familiar`.
func TestBinaryLinksNoTestHelpers(t *testing.T) {
	for _, p := range list(t, "./cmd/familiar") {
		for _, dep := range p.Deps {
			if name, ok := rel(dep); ok && strings.HasPrefix(name, "internal/") {
				t.Errorf("familiar links the test helper %s", name)
			}
			if slices.Contains(forbiddenInBinary, dep) {
				t.Errorf("familiar links %s, a test-only package", dep)
			}
		}
	}
}

// TestEveryPackageChecksLeaks: every package with tests runs the shared leak
// check from its TestMain (internal/leakcheck).
func TestEveryPackageChecksLeaks(t *testing.T) {
	for _, p := range list(t, "./...") {
		files := append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...)
		if len(files) == 0 || p.ImportPath == module+"/internal/leakcheck" {
			continue // leakcheck's own TestMain calls Main unqualified
		}
		found := false
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("func TestMain(")) && (bytes.Contains(b, []byte("leakcheck.Main(")) || bytes.Contains(b, []byte("leakcheck.Run("))) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s has tests but no TestMain running leakcheck.Main or leakcheck.Run", p.ImportPath)
		}
	}
}
