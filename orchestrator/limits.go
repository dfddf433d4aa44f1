package orchestrator

import (
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/protocol"
)

// A claude.ai usage limit belongs to the account, so it holds for every task
// of this familiar: once a task reports one (blocked{usage_limit} with the
// reset time claude gave), the queue starts nothing until the reset, and
// then the tasks the limit blocked continue by themselves (unless
// resumeAfterUsageLimit is off). A limit without a reset time holds nothing
// back: there is no time to wait for.

// usageLimit is the known limit; guarded by Orchestrator.mu.
type usageLimit struct {
	until time.Time
	timer clock.Timer
}

// resetSlack is waited after the reset time before resuming: the API's
// clock and ours differ a little, and a resume a second early meets the
// limit again.
var resetSlack = 30 * time.Second

// usageLimited records a limit that resets at resetsAt.
func (o *Orchestrator) usageLimited(resetsAt time.Time) {
	if resetsAt.IsZero() {
		return
	}
	now := o.clk.Now()
	o.mu.Lock()
	if o.closed || !resetsAt.After(o.limit.until) {
		o.mu.Unlock()
		return
	}
	o.limit.until = resetsAt
	if o.limit.timer != nil {
		o.limit.timer.Stop()
	}
	o.limit.timer = o.clk.AfterFunc(max(resetsAt.Sub(now), 0)+resetSlack, o.usageLimitReset)
	resume := o.settingsNow().ResumeAfterUsageLimit
	o.mu.Unlock()
	text := fmt.Sprintf("Claude's usage limit is reached until %s: queued tasks wait", resetsAt.Local().Format("15:04 MST, Jan 2"))
	if resume {
		text += ", and tasks it blocked continue then."
	} else {
		text += "; tasks it blocked stay blocked (resumeAfterUsageLimit is off)."
	}
	o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: text})
}

// usageLimitReset lifts the limit: blocked tasks resume (if the setting
// says so) and the queue starts again.
func (o *Orchestrator) usageLimitReset() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if o.clk.Now().Before(o.limit.until) {
		o.mu.Unlock()
		return // a later limit replaced this one; its own timer runs
	}
	o.limit = usageLimit{}
	resume := o.settingsNow().ResumeAfterUsageLimit
	actors := o.actorsLocked()
	o.mu.Unlock()
	if resume {
		for _, a := range actors {
			v := a.view()
			if v.T.Status == protocol.StatusBlocked && v.T.Blocked != nil && v.T.Blocked.Reason == protocol.BlockedUsageLimit {
				a.post(envelope{in: cmdResume{auto: true}})
			}
		}
	}
	o.poke()
}

// limitedLocked reports whether a known usage limit holds the queue back.
func (o *Orchestrator) limitedLocked() bool {
	return !o.limit.until.IsZero() && o.clk.Now().Before(o.limit.until)
}

// stopLimitTimerLocked ends the reset timer (familiar is closing).
func (o *Orchestrator) stopLimitTimerLocked() {
	if o.limit.timer != nil {
		o.limit.timer.Stop()
		o.limit.timer = nil
	}
}
