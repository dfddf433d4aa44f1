package runfile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

func ptr[T any](v T) *T { return &v }

// exampleTasks is what testdata/example.{yaml,json} hold.
var exampleSettings = Settings{
	Concurrency: 2,
	Driver:      protocol.DriverPTY,
	BaseRef:     "main",
	PermissionPolicy: &protocol.Policy{
		Default: protocol.PolicyDeny,
		Allow:   []string{"Bash(go test:*)", "Read", "Edit"},
		Deny:    []string{"Bash(git push:*)"},
	},
	ApprovalTimeoutSec:   60,
	NoProgressTimeoutSec: 900,
	TermGraceSec:         ptr(10),
}

var exampleTasks = []protocol.TaskCreateParams{
	{
		Title:              "Fix the login redirect",
		Description:        "After login users land on /home instead of the page they came from.",
		Type:               protocol.TaskTypeFix,
		AcceptanceCriteria: []string{"redirects to the original page"},
		Priority:           1,
		BaseRef:            "main", // from settings
		Hints:              &protocol.Hints{Files: []string{"auth/login.go"}},
	},
	{
		Title:       "Test the session store",
		Description: "The session store has no tests. Cover expiry, renewal and\nconcurrent access.\n",
		Type:        protocol.TaskTypeTest,
		Mode:        protocol.ModeExecutor,
		BaseRef:     "develop",
		AcceptanceCriteria: []string{
			"expiry is tested with an injected clock",
			"go test -race ./session/ passes",
		},
		Hints: &protocol.Hints{
			Files: []string{"session/store.go"},
			Notes: "The clock interface is in internal/clock.",
		},
		Directives:           &protocol.Directives{Think: true},
		NoProgressTimeoutSec: ptr(600),
	},
}

func TestLoadExamples(t *testing.T) {
	for _, tc := range []struct {
		path  string
		lines []int
	}{
		{"testdata/example.yaml", []int{16, 23}},
		{"testdata/example.json", []int{16, 24}},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			f, err := Load(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			want := &File{Path: tc.path, Settings: exampleSettings, Tasks: exampleTasks, Lines: tc.lines}
			if !reflect.DeepEqual(f, want) {
				t.Errorf("Load(%s) =\n%+v\nwant\n%+v", tc.path, f, want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	minimal := protocol.TaskCreateParams{Title: "t", Description: "d"}
	for _, tc := range []struct {
		name, path, in string
		want           *File
	}{
		{
			name: "a top-level list takes default settings",
			in:   "- title: t\n  description: d\n- {title: u, description: e, priority: -2}\n",
			want: &File{
				Settings: Settings{Concurrency: 3},
				Tasks:    []protocol.TaskCreateParams{minimal, {Title: "u", Description: "e", Priority: -2}},
				Lines:    []int{1, 3},
			},
		},
		{
			name: "a top-level JSON list",
			path: "tasks.json",
			in:   `[{"title": "t", "description": "d"}]`,
			want: &File{Settings: Settings{Concurrency: 3}, Tasks: []protocol.TaskCreateParams{minimal}, Lines: []int{1}},
		},
		{
			name: "JSON is recognised without the extension, with escapes YAML lacks",
			path: "tasks",
			in:   `{"tasks": [{"title": "a\/b \ud83d\ude00", "description": "d"}]}`,
			want: &File{
				Settings: Settings{Concurrency: 3},
				Tasks:    []protocol.TaskCreateParams{{Title: "a/b 😀", Description: "d"}},
				Lines:    []int{1},
			},
		},
		{
			name: "JSON indented with tabs",
			path: "tasks.json",
			in:   "{\n\t\"tasks\": [\n\t\t{\"title\": \"t\", \"description\": \"d\"}\n\t]\n}\n",
			want: &File{Settings: Settings{Concurrency: 3}, Tasks: []protocol.TaskCreateParams{minimal}, Lines: []int{3}},
		},
		{
			name: "settings.baseRef fills only tasks without one; empty settings are defaults",
			in: "settings:\n  baseRef: main\n  termGraceSec: 0\ntasks:\n" +
				"  - {title: t, description: d}\n  - {title: t, description: d, baseRef: v1.2}\n",
			want: &File{
				Settings: Settings{Concurrency: 3, BaseRef: "main", TermGraceSec: ptr(0)},
				Tasks: []protocol.TaskCreateParams{
					{Title: "t", Description: "d", BaseRef: "main"},
					{Title: "t", Description: "d", BaseRef: "v1.2"},
				},
				Lines: []int{5, 6},
			},
		},
		{
			name: "null values are absent ones",
			in:   "settings:\ntasks:\n  - title: t\n    description: d\n    hints:\n    priority: ~\n",
			want: &File{Settings: Settings{Concurrency: 3}, Tasks: []protocol.TaskCreateParams{minimal}, Lines: []int{3}},
		},
		{
			name: "YAML scalars are strings as written; aliases; a byte-order mark",
			in: "\uFEFFtasks:\n  - title: 1.10\n    description: &d yes\n    acceptanceCriteria: [*d, true]\n" +
				"    mcpServers: {fs: {type: stdio, command: npx, args: [-y, fs], env: {A: b}}}\n",
			want: &File{
				Settings: Settings{Concurrency: 3},
				Tasks: []protocol.TaskCreateParams{{
					Title: "1.10", Description: "yes", AcceptanceCriteria: []string{"yes", "true"},
					McpServers: map[string]protocol.McpServer{
						"fs": {Type: protocol.McpStdio, Command: "npx", Args: []string{"-y", "fs"}, Env: map[string]string{"A": "b"}},
					},
				}},
				Lines: []int{2},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "tasks.yaml"
			}
			f, err := Parse(path, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Path = path
			if !reflect.DeepEqual(f, tc.want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", f, tc.want)
			}
		})
	}
}

// lines joins its arguments as the lines of a file.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestParseErrors(t *testing.T) {
	const task = "  - title: t\n    description: d\n"
	for _, tc := range []struct {
		name, path, in, want string
	}{
		// Validation by protocol, mapped back to the line of the field.
		{"missing title at the task's line", "", lines(
			"tasks:",
			"  - description: d",
		), "tasks.yaml:2:5: tasks[0].title: title is required"},
		{"empty title at its key", "", lines(
			"settings:",
			"  concurrency: 1",
			"tasks:",
			"  - title: a",
			"    description: d",
			"",
			"  - title: b",
			"    description: d",
			"",
			"  # the third",
			"  - description: d",
			"    title: ' '",
		), "tasks.yaml:12:5: tasks[2].title: title is required"},
		{"empty acceptance criterion at the item", "", "tasks:\n" + task + "    acceptanceCriteria: [ok, '']\n",
			"tasks.yaml:4:30: tasks[0].acceptanceCriteria[1]: acceptanceCriteria[1] is required"},
		{"empty hint file", "", "tasks:\n" + task + "    hints:\n      files:\n        - ''\n",
			"tasks.yaml:6:11: tasks[0].hints.files[0]: hints.files[0] is required"},
		{"bad task type", "", "tasks:\n" + task + "    type: feature\n",
			`tasks.yaml:4:5: tasks[0].type: type must be one of implement, fix, refactor, test, custom, not "feature"`},
		{"bad task driver", "", "tasks:\n" + task + "    driver: tty\n",
			`tasks.yaml:4:5: tasks[0].driver: driver must be one of pty, stream, not "tty"`},
		{"MCP server without command, at the server", "", "tasks:\n" + task + "    mcpServers:\n      fs: {type: stdio}\n",
			"tasks.yaml:5:7: tasks[0].mcpServers.fs.command: mcpServers.fs.command is required"},
		{"task policy rule", "", "tasks:\n" + task + "    permissionPolicy: {default: ask, deny: [Read, '']}\n",
			`tasks.yaml:4:51: tasks[0].permissionPolicy.deny[1]: permissionPolicy.deny[1] must be a permission rule such as "Read" or "Bash(go test:*)", not ""`},
		{"task noProgressTimeoutSec", "", "tasks:\n" + task + "    noProgressTimeoutSec: 0\n",
			"tasks.yaml:4:5: tasks[0].noProgressTimeoutSec: noProgressTimeoutSec must be between 1 and 604800, not 0"},
		{"task baseRef", "", "tasks:\n" + task + "    baseRef: --force\n",
			`tasks.yaml:4:5: tasks[0].baseRef: baseRef must name a branch, tag or commit, not "--force"`},

		// Run settings.
		{"concurrency 0", "", "settings:\n  concurrency: 0\ntasks:\n" + task,
			"tasks.yaml:2:3: settings.concurrency: concurrency must be between 1 and 64, not 0"},
		{"concurrency 65", "", "settings: {concurrency: 65}\ntasks:\n" + task,
			"tasks.yaml:1:12: settings.concurrency: concurrency must be between 1 and 64, not 65"},
		{"settings driver", "", "settings:\n  driver: tty\ntasks:\n" + task,
			`tasks.yaml:2:3: settings.driver: driver must be one of pty, stream, not "tty"`},
		{"settings merge", "", "settings:\n  merge: now\ntasks:\n" + task,
			`tasks.yaml:2:3: settings.merge: merge must be "queue" (merge the finished tasks through the merge queue) or absent, not "now"`},
		{"verify without the queue", "", "settings:\n  verify: make test\ntasks:\n" + task,
			"tasks.yaml:2:3: settings.verify: verify is for the merge queue: add merge: queue"},
		{"mergeStrategy", "", "settings:\n  merge: queue\n  mergeStrategy: ff\ntasks:\n" + task,
			`tasks.yaml:3:3: settings.mergeStrategy: mergeStrategy must be one of merge, squash, rebase, not "ff"`},
		{"settings baseRef", "", "settings:\n  baseRef: -x\ntasks:\n" + task,
			`tasks.yaml:2:3: settings.baseRef: baseRef must name a branch, tag or commit, not "-x"`},
		{"policy without default", "", "settings:\n  permissionPolicy:\n    allow: [Read]\ntasks:\n" + task,
			"tasks.yaml:2:3: settings.permissionPolicy.default: permissionPolicy.default is required; use one of ask, allow, deny"},
		{"policy default", "", "settings:\n  permissionPolicy:\n    default: maybe\ntasks:\n" + task,
			`tasks.yaml:3:5: settings.permissionPolicy.default: permissionPolicy.default must be one of ask, allow, deny, not "maybe"`},
		{"empty policy rule", "", "settings:\n  permissionPolicy:\n    default: deny\n    allow: [Read, '']\ntasks:\n" + task,
			`tasks.yaml:4:19: settings.permissionPolicy.allow[1]: permissionPolicy.allow[1] must be a permission rule such as "Read" or "Bash(go test:*)", not ""`},
		{"approval timeout 0", "", "settings:\n  approvalTimeoutSec: 0\ntasks:\n" + task,
			"tasks.yaml:2:3: settings.approvalTimeoutSec: approvalTimeoutSec must be between 1 and 604800, not 0"},
		{"negative grace", "", "settings:\n  termGraceSec: -1\ntasks:\n" + task,
			"tasks.yaml:2:3: settings.termGraceSec: termGraceSec must be between 0 and 3600, not -1"},

		// Unknown and duplicate keys, at any depth.
		{"unknown task key", "", "tasks:\n  - titel: t\n    description: d\n",
			`tasks.yaml:2:5: tasks[0].titel: unknown key "titel"; did you mean "title"?`},
		{"snake_case key", "", "tasks:\n" + task + "    acceptance_criteria: [x]\n",
			`tasks.yaml:4:5: tasks[0].acceptance_criteria: unknown key "acceptance_criteria"; did you mean "acceptanceCriteria"?`},
		{"unknown hints key", "", "tasks:\n" + task + "    hints: {file: [a.go]}\n",
			`tasks.yaml:4:13: tasks[0].hints.file: unknown key "file"; did you mean "files"?`},
		{"unknown directives key", "", "tasks:\n" + task + "    directives:\n      ultrathink: true\n",
			`tasks.yaml:5:7: tasks[0].directives.ultrathink: unknown key "ultrathink"; the keys here are think, verbose, elevated`},
		{"unknown policy key", "", "settings:\n  permissionPolicy: {default: deny, alow: [Read]}\ntasks:\n" + task,
			`tasks.yaml:2:37: settings.permissionPolicy.alow: unknown key "alow"; did you mean "allow"?`},
		{"unknown MCP server key", "", "tasks:\n" + task + "    mcpServers: {fs: {type: stdio, cmd: x}}\n",
			`tasks.yaml:4:36: tasks[0].mcpServers.fs.cmd: unknown key "cmd"; the keys here are type, command, args, env, url, headers`},
		{"protocol's settings name", "", "settings:\n  maxConcurrent: 2\ntasks:\n" + task,
			`tasks.yaml:2:3: settings.maxConcurrent: unknown key "maxConcurrent"; did you mean "concurrency"?`},
		{"unknown top-level key", "", "task:\n" + task,
			`tasks.yaml:1:1: task: unknown key "task"; did you mean "tasks"?`},
		{"duplicate key", "", "tasks:\n" + task + "    title: u\n",
			`tasks.yaml:4:5: tasks[0].title: duplicate key "title" (first at line 2)`},
		{"merge key", "", "tasks:\n  - <<: {title: t}\n    description: d\n",
			"tasks.yaml:2:5: tasks[0]: YAML merge keys (<<) are not supported; write the keys out"},

		// Wrong types, at the value.
		{"priority: high", "", "tasks:\n" + task + "    priority: high\n",
			`tasks.yaml:4:15: tasks[0].priority: priority must be an integer, not "high"`},
		{"priority: 1.5", "", "tasks:\n" + task + "    priority: 1.5\n",
			"tasks.yaml:4:15: tasks[0].priority: priority must be an integer, not 1.5"},
		{"bool as yes", "", "tasks:\n" + task + "    directives: {think: yes}\n",
			`tasks.yaml:4:25: tasks[0].directives.think: directives.think must be true or false, not "yes"`},
		{"criteria not a list", "", "tasks:\n" + task + "    acceptanceCriteria: done\n",
			`tasks.yaml:4:25: tasks[0].acceptanceCriteria: acceptanceCriteria must be a list, not "done"`},
		{"title a list", "", "tasks:\n  - title: [a]\n    description: d\n",
			"tasks.yaml:2:12: tasks[0].title: title must be a string, not a list"},
		{"tasks a mapping", "", "tasks:\n  title: t\n",
			"tasks.yaml:2:3: tasks: tasks must be a list, not a mapping"},
		{"task a string", "", "tasks:\n  - fix the bug\n",
			`tasks.yaml:2:5: tasks[0]: tasks[0] must be a mapping, not "fix the bug"`},
		{"settings a list", "", "settings: [a]\ntasks:\n" + task,
			"tasks.yaml:1:11: settings: settings must be a mapping, not a list"},
		{"key a list", "", "tasks:\n  - [a]: b\n",
			"tasks.yaml:2:5: tasks[0]: keys must be names, not a list"},

		// Nothing to run.
		{"empty file", "", "", "tasks.yaml:1: tasks: at least one task is required"},
		{"only comments", "", "# nothing yet\n", "tasks.yaml:1: tasks: at least one task is required"},
		{"empty list", "", "settings: {concurrency: 2}\ntasks: []\n",
			"tasks.yaml:2:1: tasks: at least one task is required"},
		{"no tasks key", "", "settings: {concurrency: 2}\n",
			"tasks.yaml:1:1: tasks: at least one task is required"},
		{"a scalar", "", "hello\n",
			`tasks.yaml:1:1: the file must be a mapping with settings and tasks, or a list of tasks, not "hello"`},
		{"empty JSON list", "tasks.json", "[]", "tasks.json:1:1: tasks: at least one task is required"},

		// YAML syntax: the line of the mistake, not where yaml.v3 says.
		{"unquoted colon", "", "tasks:\n" + task + "  - title: Fix: login\n    description: d\n",
			`tasks.yaml:4: invalid YAML: mapping values are not allowed in this context (a value that contains ": " must be quoted)`},
		{"bad indentation", "", "tasks:\n" + task + "   bad: x\n",
			"tasks.yaml:4: invalid YAML: did not find expected '-' indicator (check the indentation of the list)"},
		{"stray bracket", "", "tasks:\n" + task + "    acceptanceCriteria: [a]]\n",
			"tasks.yaml:4: invalid YAML: did not find expected key (check the indentation, and quote values that contain quotes)"},
		{"unclosed bracket", "", "tasks:\n" + task + "    acceptanceCriteria: [a, b\n" + task,
			"tasks.yaml:4: invalid YAML: did not find expected ',' or ']'"},
		{"unclosed quote", "", "tasks:\n" + task + "    hints: {notes: \"x}\n" + task,
			"tasks.yaml:4: invalid YAML: found unexpected end of stream"},
		{"tab indentation", "", "tasks:\n  - title: t\n\tdescription: d\n",
			"tasks.yaml:3: invalid YAML: found a tab character that violates indentation"},
		{"mistake on the first line", "", "tasks: [\n",
			"tasks.yaml:1: invalid YAML: did not find expected node content"},
		{"unknown alias", "", "tasks:\n" + task + "    hints: *h\n",
			"tasks.yaml:4: invalid YAML: unknown anchor 'h' referenced"},
		{"two documents", "", "tasks:\n" + task + "---\ntasks:\n" + task,
			"tasks.yaml:4:1: the file holds a second YAML document here; put all the tasks in one"},
		{"control character", "", "tasks:\n  - title: t\a\n", "tasks.yaml:2:13: the character U+0007 is not allowed in a tasks file"},
		{"not UTF-8", "", "tasks:\n  - title: \xff\n", "tasks.yaml:2:12: the file is not UTF-8 text: byte 0xff"},

		// JSON: syntax errors with a column, strict types.
		{"JSON trailing comma", "tasks.json", "{\"tasks\": [\n  {\"title\": \"t\", \"description\": \"d\"},\n]}\n",
			"tasks.json:3:1: invalid JSON: invalid character ']' looking for beginning of value"},
		{"JSON missing comma", "tasks.json", "{\"tasks\": [\n  {\"title\": \"t\"\n   \"description\": \"d\"}]}\n",
			"tasks.json:3:4: invalid JSON: invalid character '\"' after object key:value pair"},
		{"JSON cut short", "tasks.json", "{\"tasks\": [\n  {\"title\": \"t\"\n",
			"tasks.json:2:16: invalid JSON: unexpected end of JSON input"},
		{"JSON-looking file with a mistake", "tasks", "{\"tasks\": [{\"title\": \"t\" \"description\": \"d\"}]}",
			"tasks:1:26: invalid JSON: invalid character '\"' after object key:value pair"},
		{"YAML in a .json file", "tasks.json", "tasks:\n" + task,
			"tasks.json:1:2: invalid JSON: invalid character 'a' in literal true (expecting 'r') (the file is YAML: name it .yaml)"},
		{"JSON number as string", "tasks.json", `{"tasks": [{"title": 5, "description": "d"}]}`,
			"tasks.json:1:22: tasks[0].title: title must be a string, not 5"},
		{"JSON string as number", "tasks.json", `{"tasks": [{"title": "t", "description": "d", "priority": "1"}]}`,
			`tasks.json:1:59: tasks[0].priority: priority must be an integer, not "1"`},
		{"JSON huge number", "tasks.json", `[{"title": "t", "description": "d", "priority": 99999999999999999999}]`,
			"tasks.json:1:49: tasks[0].priority: priority is out of range: 99999999999999999999"},
		{"JSON unknown key", "tasks.json", "{\n  \"tasks\": [\n    {\"title\": \"t\", \"description\": \"d\", \"Priority\": 1}\n  ]\n}\n",
			`tasks.json:3:40: tasks[0].Priority: unknown key "Priority"; did you mean "priority"?`},
		{"JSON missing title", "tasks.json", "{\n  \"tasks\": [\n    {\"description\": \"d\"}\n  ]\n}\n",
			"tasks.json:3:5: tasks[0].title: title is required"},
		{"JSON type names", "tasks.json", `[{"title": "t", "description": "d", "hints": []}]`,
			"tasks.json:1:46: tasks[0].hints: hints must be an object, not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "tasks.yaml"
			}
			f, err := Parse(path, []byte(tc.in))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", f)
			}
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Errorf("error is %T, not *Error", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("tasks.yaml", []byte("tasks:\n  - title: t\n    description: d\n    priority: high\n"))
	want := &Error{Path: "tasks.yaml", Line: 4, Column: 15, Field: "tasks[0].priority",
		Msg: `priority must be an integer, not "high"`}
	if !reflect.DeepEqual(err, want) {
		t.Errorf("Parse error = %#v, want %#v", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	e, ok := errors.AsType[*Error](err)
	if !ok || !errors.Is(err, fs.ErrNotExist) || e.Path != path || e.Line != 0 {
		t.Fatalf("Load of a missing file = %#v, want an *Error wrapping fs.ErrNotExist", err)
	}
	if want := path + ": cannot read the tasks file: no such file or directory"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestAliasExpansionIsBounded(t *testing.T) {
	// 50 kB of text that would expand to a million skills.
	in := "tasks:\n  - title: t\n    description: d\n    skills: &s [" + strings.Repeat("y, ", 1000) + "y]\n" +
		strings.Repeat("  - {title: t, description: d, skills: *s}\n", 1000)
	_, err := Parse("tasks.yaml", []byte(in))
	if err == nil || !strings.Contains(err.Error(), "too many values") {
		t.Fatalf("Parse of an alias bomb = %v, want a too-many-values error", err)
	}
}
