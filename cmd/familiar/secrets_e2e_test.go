package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// fakeSecret builds a secret of n characters after prefix at run time, so
// the source holds nothing a secret scanner would flag.
func fakeSecret(prefix string, seed, n int) string {
	const alphabet = "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYz"
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		b.WriteByte(alphabet[(i*i*seed+i*11+seed)%len(alphabet)])
	}
	return b.String()
}

// terminalText is what a terminal shows of s, roughly: escape sequences
// (raw, or JSON-escaped as \u001b in the store) removed, cursor moves as
// spaces.
var terminalEscape = regexp.MustCompile(`(\x1b|\\u001b)(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[ -/]*[0-~])`)

func terminalText(s string) string {
	return terminalEscape.ReplaceAllStringFunc(s, func(e string) string {
		switch e[len(e)-1] {
		case 'C', 'G', 'B', 'A', 'H', 'D', 'd':
			return " "
		}
		return ""
	})
}

// shows returns a 12-character piece of secret (past what the masked form
// keeps) that text shows, raw or as a terminal would, or "".
func shows(text string, secrets ...string) string {
	for _, t := range []string{text, terminalText(text)} {
		for _, sec := range secrets {
			for i := 8; i+12 <= len(sec); i++ {
				if p := sec[i : i+12]; strings.Contains(t, p) {
					return p
				}
			}
		}
	}
	return ""
}

// The agent's Bash tool prints keys the way real programs do: in colour
// with the colour changing inside the key, after cursor moves, and in two
// writes with a pause between them; the model repeats one in its summary
// with a colour code inside. No notification, no page of task/output and no
// byte of the store shows them.
func TestSecretsThroughTheTerminalNeverLeave(t *testing.T) {
	key := fakeSecret("sk-"+"ant-api03-", 3, 93) + "AA"
	bearer := fakeSecret("", 5, 40)
	literal := fakeSecret("tok_live_", 7, 30)
	// The command names the secrets as a person would (K=sk-ant-…,
	// TOKEN=…), so masking the command itself is expected; the literal
	// comes from the environment.
	command := strings.Join([]string{
		// colour inside the key
		`K='` + key + `'`,
		`printf '\033[1m%s\033[31m%s\033[0m\n' "${K:0:20}" "${K:20}"`,
		// cursor moves for the spaces of an Authorization header
		`TOKEN='` + bearer + `'`,
		`printf 'Authorization:\033[1CBearer\033[27G%s\n' "$TOKEN"`,
		// two writes with a pause between them
		`printf 'key=%s' "${K:0:40}"; sleep 0.3; printf '%s\n' "${K:40}"`,
		// the value of a secret variable of familiar's own environment,
		// broken by a colour code
		`printf '%s\033[0m%s\n' "${MY_SERVICE_TOKEN:0:12}" "${MY_SERVICE_TOKEN:12}"`,
	}, "; ")
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": command}}}},
		fakeapi.Reply{Text: "Printed them. The key was " + key[:30] + "\x1b[1m" + key[30:] + " and the header Bearer\x1b[1C" + bearer + "."},
	))
	defer api.Close()
	repo := gitRepo(t)
	state := t.TempDir()
	f := startFamiliar(t, repo, api, "MY_SERVICE_TOKEN="+literal,
		"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(state, "data"))
	c := f.client
	var init protocol.InitializeResult
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{
		"permissionPolicy": map[string]any{"default": "allow"}}}, &init)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "print keys", "description": "print the keys"}, &task)
	c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))

	secrets := []string{key, bearer, literal}
	// Every page of task/output, small pages so keys straddle them.
	var output strings.Builder
	for offset := int64(0); ; {
		var page protocol.TaskOutputResult
		c.Result("task/output", map[string]any{"id": task.ID, "offset": offset, "limit": 512}, &page)
		output.WriteString(page.Data)
		if page.NextOffset >= page.Size || page.NextOffset == offset {
			break
		}
		offset = page.NextOffset
	}
	if output.Len() == 0 {
		t.Fatal("task/output is empty: did the agent run?")
	}
	if p := shows(output.String(), secrets...); p != "" {
		t.Errorf("task/output pages show %q", p)
	}
	f.stop(t)

	var outputNotes strings.Builder
	for _, n := range c.Notifications() {
		var strs []string
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				strs = append(strs, v)
			case map[string]any:
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var v any
		_ = json.Unmarshal(n.Params, &v)
		walk(v)
		if p := shows(strings.Join(strs, "\n"), secrets...); p != "" {
			t.Errorf("%s notification shows %q: %.400s", n.Method, p, n.Params)
			if d := os.Getenv("FAMILIAR_TEST_DUMP"); d != "" {
				os.WriteFile(filepath.Join(d, n.Method[5:]+"-"+p), n.Params, 0o600)
			}
		}
		if n.Method == "task/output" {
			outputNotes.WriteString(strings.Join(strs[1:], ""))
		}
	}
	// Keys split across task/output notifications.
	if p := shows(outputNotes.String(), secrets...); p != "" {
		t.Errorf("task/output notifications, joined, show %q", p)
	}
	db, err := os.ReadFile(filepath.Join(init.Workspace.DataDir, "familiar.db"))
	if err != nil {
		t.Fatal(err)
	}
	if p := shows(string(db), secrets...); p != "" {
		t.Errorf("the store file shows %q", p)
	}
	if p := shows(f.logs(), secrets...); p != "" {
		t.Errorf("familiar's log shows %q", p)
	}
	if !strings.Contains(output.String(), "[masked ") {
		t.Error("no masked form in task/output: were the keys printed at all?")
	}
}
