// Package sandbox decides whether a task's claude runs inside claude's own
// sandbox for the Bash tool (bubblewrap on Linux, Seatbelt on macOS), and
// builds the settings that turn it on: writes allowed in the worktree and
// the system temp dir only, the network open or limited to an allow-list.
//
// The sandbox is the wall the policy is not: a Bash command that cd's out
// of the worktree, names an absolute path or runs a build script writes
// only where the sandbox lets it, whatever the permission policy allowed.
package sandbox

import (
	"errors"
	"fmt"
)

// Mode is the sandbox setting.
type Mode string

const (
	On       Mode = "on"       // sandboxed where the platform can; said when not
	Off      Mode = "off"      // never sandboxed; every task says it runs unconfined
	Required Mode = "required" // a task that cannot be sandboxed does not start
)

// Modes are the valid settings, the default first.
var Modes = []Mode{On, Off, Required}

// Availability is what this machine offers.
type Availability struct {
	OK bool
	// Weaker: only claude's weaker nested mode works (no fresh /proc, as in
	// an unprivileged container): the host's /proc stays readable.
	Weaker bool
	// Why says what is missing when not OK, and what the weaker mode
	// gives up when Weaker, with the fix.
	Why string
}

// Plan is what a task's claude runs with.
type Plan struct {
	Enabled bool
	Weaker  bool
	// Required: claude is told to refuse to start rather than run a
	// command unsandboxed when its own check fails.
	Required bool
	// Unconfined is the sentence a person sees when the task's Bash
	// commands run without the sandbox ("" when they run in it).
	Unconfined string
	// Warn: the task runs unconfined against the settings' wish (on, but
	// this machine has no sandbox), which is said as a warning; off by the
	// settings is said by the task alone (Task.agent.unconfined), not once
	// per task start.
	Warn bool
	// Note says something about the sandbox that is not a failure (the
	// weaker nested mode).
	Note string
}

// ErrUnavailable is a required sandbox this machine does not have.
var ErrUnavailable = errors.New("sandbox: required")

// Decide is the plan for mode on a machine with a. A required sandbox that
// is not available is an error naming what is missing.
func Decide(mode Mode, a Availability) (Plan, error) {
	switch mode {
	case Off:
		return Plan{Unconfined: "the sandbox is off in familiar's settings (sandbox: off): its Bash commands can write wherever you can"}, nil
	case "", On, Required:
	default:
		return Plan{}, fmt.Errorf("sandbox must be on, off or required, not %q", mode)
	}
	if !a.OK {
		if mode == Required {
			return Plan{}, fmt.Errorf("%w, but %s", ErrUnavailable, a.Why)
		}
		return Plan{Unconfined: "no sandbox on this machine (" + a.Why + "): its Bash commands can write wherever you can", Warn: true}, nil
	}
	p := Plan{Enabled: true, Weaker: a.Weaker, Required: mode == Required}
	if a.Weaker {
		p.Note = "the sandbox runs in claude's weaker nested mode (" + a.Why + ")"
	}
	return p, nil
}

// Settings is the "sandbox" object of claude's settings for p, or nil when
// the sandbox is off. allowedDomains, when not empty, is the only network
// the sandboxed commands reach (with loopback); empty leaves it open.
func Settings(p Plan, allowedDomains []string) map[string]any {
	if !p.Enabled {
		return nil
	}
	s := map[string]any{
		"enabled":           true,
		"failIfUnavailable": p.Required,
		// familiar's policy decides every command, sandboxed or not.
		"autoAllowBashIfSandboxed": false,
		// A call asking to run outside (dangerouslyDisableSandbox) comes
		// to familiar as a permission question, which elevation never
		// answers (package policy).
		"allowUnsandboxedCommands": true,
		// Writes: claude's defaults, the working directory (the worktree)
		// and the session's own temp dir, which claude makes in the
		// system's and points TMPDIR at.
	}
	if p.Weaker {
		s["enableWeakerNestedSandbox"] = true
	}
	// A host no entry allows is held for a prompt on claude's screen
	// ("Network request outside of sandbox … Do you want to allow this
	// connection?"), which no hook reports: measured with 2.1.330, the
	// first was familiar's own hook call to 127.0.0.1, before the first
	// turn. So the network is either open ("*", which the matcher of
	// 2.1.330 takes for any host) or an allow-list claude enforces without
	// asking (strictAllowlist), with the loopback host familiar's hooks and
	// the person's local servers use.
	network := map[string]any{"allowedDomains": []string{"*"}}
	if len(allowedDomains) > 0 {
		network = map[string]any{"allowedDomains": append([]string{"127.0.0.1", "localhost"}, allowedDomains...), "strictAllowlist": true}
	}
	s["network"] = network
	return s
}
