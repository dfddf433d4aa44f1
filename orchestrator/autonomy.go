package orchestrator

import (
	"fmt"

	"github.com/familiar-dev/familiar/protocol"
)

// The warning before autonomy (issue 26): a permission policy of
// default allow, or an elevated task, starts agents that ask nothing. familiar
// says so once per workspace — per familiar serving it, and again after the
// setting went back and came again — as a server/message warning naming the
// setting, so every client can show it with a way to the setting.

// Settings a warning of autonomy names (ServerMessageNotification.Setting).
const (
	settingPolicy   = "permissionPolicy"
	settingElevated = "directives.elevated"
)

// autonomyWarnings are the warnings for a policy and directives: the
// setting each names and its text. Pure, for the test.
func autonomyWarnings(policy protocol.Policy, fromTask bool, directives *protocol.Directives) map[string]string {
	out := map[string]string{}
	if policy.Default == protocol.PolicyAllow {
		where := "the settings' permissionPolicy"
		if fromTask {
			where = "a task's permissionPolicy"
		}
		out[settingPolicy] = fmt.Sprintf("The permission policy's default is allow (%s): agents run every tool call no deny rule matches without asking anyone. A deny rule still wins.", where)
	}
	if directives != nil && directives.Elevated {
		out[settingElevated] = "A task is elevated (task/create directives.elevated): its agent runs every tool call no deny rule matches without asking anyone. A deny rule still wins."
	}
	return out
}

// warnAutonomy sends each warning of ws not sent since its setting was last
// off; off lists the settings now off (policy back to ask or deny).
func (o *Orchestrator) warnAutonomy(ws map[string]string, off ...string) {
	o.mu.Lock()
	if o.warned == nil {
		o.warned = map[string]bool{}
	}
	for _, s := range off {
		delete(o.warned, s)
	}
	var send []protocol.ServerMessageNotification
	for _, s := range []string{settingPolicy, settingElevated} {
		if text, ok := ws[s]; ok && !o.warned[s] {
			o.warned[s] = true
			send = append(send, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: text, Setting: s})
		}
	}
	o.mu.Unlock()
	for _, n := range send {
		o.pub.publish("", n)
	}
}
