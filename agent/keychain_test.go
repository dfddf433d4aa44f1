package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// On macOS the CLI names its Keychain item after the credential store's
// directory (docs/CLAUDE-CLI.md §8.1). A task's claude, with its own
// CLAUDE_CONFIG_DIR, must name the same item as the user's own claude —
// which only CLAUDE_SECURESTORAGE_CONFIG_DIR achieves — or it finds no
// login.
func TestTasksUseTheUsersKeychainItem(t *testing.T) {
	custom := "/Users/ann/work-claude"
	sum := sha256.Sum256([]byte(custom))
	for _, c := range []struct {
		name string
		user []string
		want string
	}{
		{"default config dir", []string{"HOME=/Users/ann", "USER=ann"}, "Claude Code-credentials"},
		{"the user's own CLAUDE_CONFIG_DIR", []string{"HOME=/Users/ann", "CLAUDE_CONFIG_DIR=" + custom},
			"Claude Code-credentials-" + hex.EncodeToString(sum[:])[:8]},
	} {
		t.Run(c.name, func(t *testing.T) {
			user, ok := cliKeychainService(c.user)
			if !ok || user != c.want {
				t.Fatalf("the user's claude uses %q (%v), want %q", user, ok, c.want)
			}
			task := SessionEnv(c.user, "/Users/ann/Library/Application Support/familiar/state/app-1a2b3c4d/tasks/t1/claude", nil)
			got, ok := cliKeychainService(task)
			if !ok || got != user {
				t.Errorf("a task's claude uses %q (%v), the user's %q", got, ok, user)
			}
			// What isolating the config dir alone would do: another item.
			naive := append(append([]string(nil), c.user...), "CLAUDE_CONFIG_DIR=/elsewhere")
			if other, _ := cliKeychainService(naive); other == user {
				t.Errorf("a config dir of its own still names %q", other)
			}
		})
	}
	if _, ok := keychainService(true, "/Users/zoë/.claude"); ok {
		t.Error("a directory beyond ASCII got a name; the CLI hashes its NFC form, which familiar does not compute")
	}
}
