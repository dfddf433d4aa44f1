package main

import (
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
)

// A permissive policy or an elevated task is said once per workspace, as a
// warning naming the setting (issue 26), through the background familiar
// and in-process: at initialize's settings, at the first elevated task (not
// the second), and again when the policy went back to ask and to allow.
func TestWarningBeforeAutonomy(t *testing.T) {
	bothModes(t, func(t *testing.T, mode serveMode) {
		api := fakeapi.Start(fakeapi.PromptScript())
		defer api.Close()
		repo := gitRepo(t)
		f := startFamiliarIn(t, mode, repo, api)
		c := f.client
		allow := map[string]any{"permissionPolicy": map[string]any{"default": "allow", "deny": []string{"Bash(rm:*)"}}}
		c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": allow}, nil)
		policyWarning := editor.Method("server/message", `"level":"warning"`, `"setting":"permissionPolicy"`)
		elevatedWarning := editor.Method("server/message", `"level":"warning"`, `"setting":"directives.elevated"`)
		m, _ := c.WaitNotification(0, "the policy's warning", policyWarning)
		if !strings.Contains(string(m.Params), "default is allow") || !strings.Contains(string(m.Params), "deny rule still wins") {
			t.Errorf("%s: warning %s", mode, m.Params)
		}
		for _, title := range []string{"first", "second"} {
			c.Result("task/create", map[string]any{"title": title, "description": "@@TEXT Done.", "directives": map[string]any{"elevated": true}}, nil)
		}
		c.WaitNotification(0, "the elevated warning", elevatedWarning)
		// The same policy again says nothing; back to ask and to allow
		// again says it again.
		c.Result("settings/update", map[string]any{"settings": allow}, nil)
		c.Result("settings/update", map[string]any{"settings": map[string]any{"permissionPolicy": map[string]any{"default": "ask"}}}, nil)
		c.Result("settings/update", map[string]any{"settings": allow}, nil)
		_, next := c.WaitNotification(0, "the policy's warning", policyWarning)
		c.WaitNotification(next, "the policy's second warning", policyWarning)
		var policies, elevated int
		for _, n := range c.Notifications() {
			if policyWarning(n) {
				policies++
			}
			if elevatedWarning(n) {
				elevated++
			}
		}
		if policies != 2 || elevated != 1 {
			t.Errorf("%s: %d policy warnings (want 2), %d elevated ones (want 1)", mode, policies, elevated)
		}
		c.Result("shutdown", nil, nil)
		c.Notify("exit", nil)
	})
}
