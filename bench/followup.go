package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/protocol"
)

// FollowUpResult is a follow-up prompt on a session whose turn has ended:
// from the client sending it to the scripted API's request for it (the
// model's first text comes with that request's reply, the same for every
// system), and what the session's processes hold while idle between turns.
type FollowUpResult struct {
	System string `json:"system"`
	// FirstRequest: the client sends the follow-up → its model request.
	FirstRequest Dist `json:"firstRequest"`
	// IdleRSSMiB is the resident memory of the agent's processes (claude,
	// and the adapter's node) after the last turn, while nothing runs:
	// what a warm agent holds; 0 when none is kept.
	IdleRSSMiB float64 `json:"idleRssMiB"`
	Skipped    string  `json:"skipped,omitempty"`
}

// Systems of the follow-up scenario.
const (
	SystemFamiliarStreamCold = "familiar stream, cold (warmAgentSec 0)"
	SystemFamiliarStreamWarm = "familiar stream, warm"
	SystemFamiliarPTYCold    = "familiar pty, cold (warmAgentSec 0)"
	SystemFamiliarPTYWarm    = "familiar pty, warm"
)

// followUpper is one system's session driven turn by turn.
type followUpper interface {
	// followUp sends the i-th prompt (the first makes the session) and
	// returns when it left the client.
	followUp(ctx context.Context, i int, text string) (time.Time, error)
	// turnDone waits for the turn to end.
	turnDone(ctx context.Context) error
	// heldPIDs are the roots of the processes the session holds now.
	heldPIDs(ctx context.Context) []int
	close()
}

// followUpPrompt ends its turn at once with text: the task finishes (for
// familiar, → merging), so the next prompt is a follow-up on finished work.
func followUpPrompt(i int) string {
	return fmt.Sprintf("round %d\n@@TEXT Done with round %d.", i, i)
}

// followUp runs every system's session and sends each the same prompts in
// turn, CompareRuns follow-ups after the first (interleaved).
func (r *runner) followUp(ctx context.Context) error {
	if r.claude.Path == "" {
		return errSkip("the claude CLI is not installed (" + r.claudeErr + ")")
	}
	type entry struct {
		name string
		api  *demomodel.Server
		f    followUpper
		res  FollowUpResult
		lat  []time.Duration
	}
	var entries []*entry
	defer func() {
		for _, e := range entries {
			if e.f != nil {
				e.f.close()
			}
			e.api.Close()
		}
	}()
	familiar := func(driver protocol.Driver, warmSec int) func(context.Context, *demomodel.Server) (followUpper, error) {
		return func(ctx context.Context, api *demomodel.Server) (followUpper, error) {
			c, err := r.startFamiliar(ctx, api, driver)
			if err != nil {
				return nil, err
			}
			fc := c.(*familiarContender)
			fc.cold = warmSec == 0
			if err := fc.client.Call(ctx, protocol.MethodSettingsUpdate, protocol.SettingsUpdateParams{
				Settings: &protocol.SettingsUpdate{WarmAgentSec: &warmSec}}, nil); err != nil {
				fc.close()
				return nil, fmt.Errorf("settings/update: %w", err)
			}
			return fc, nil
		}
	}
	acp := func(ad acpAdapter) func(context.Context, *demomodel.Server) (followUpper, error) {
		return func(ctx context.Context, api *demomodel.Server) (followUpper, error) {
			c, err := r.startACP(ad)(ctx, api)
			if err != nil {
				return nil, err
			}
			return c.(*acpContender), nil
		}
	}
	starts := []struct {
		name  string
		start func(context.Context, *demomodel.Server) (followUpper, error)
	}{
		{SystemFamiliarStreamCold, familiar(protocol.DriverStream, 0)},
		{SystemFamiliarStreamWarm, familiar(protocol.DriverStream, 600)},
		{SystemFamiliarPTYCold, familiar(protocol.DriverPTY, 0)},
		{SystemFamiliarPTYWarm, familiar(protocol.DriverPTY, 600)},
		{SystemAgentACP, acp(agentACP)},
		{SystemTUIFloorAllHooks, func(ctx context.Context, api *demomodel.Server) (followUpper, error) {
			c, err := r.startTUIFloor("PermissionRequest", floorFamiliar)(ctx, api)
			if err != nil {
				return nil, err
			}
			return c.(*tuiFloor), nil
		}},
	}
	for _, s := range starts {
		if !r.compared(s.name) {
			continue
		}
		api, err := demomodel.Listen(demomodel.PromptScript())
		if err != nil {
			return err
		}
		e := &entry{name: s.name, api: api, res: FollowUpResult{System: s.name}}
		entries = append(entries, e)
		f, err := s.start(ctx, api)
		switch {
		case isSkip(err):
			e.res.Skipped = err.Error()
			r.skip("follow-up " + s.name + ": " + err.Error())
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", s.name, err)
		}
		e.f = f
	}
	for i := range r.opts.CompareRuns + 1 {
		for _, e := range shuffled(entries, i) {
			if e.f == nil {
				continue
			}
			main := countMain(e.api.MainRequests())
			sent, err := e.f.followUp(ctx, i, followUpPrompt(i))
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", e.name, i, err)
			}
			reqs, ok := e.api.WaitFor(func(reqs []demomodel.Request) bool { return countMain(reqs) >= main+1 }, 90*time.Second)
			if !ok {
				return fmt.Errorf("%s, round %d: no API request for the prompt", e.name, i)
			}
			if i > 0 { // the first prompt starts the session: not a follow-up
				e.lat = append(e.lat, nthMain(reqs, main).At.Sub(sent))
			}
			if err := e.f.turnDone(ctx); err != nil {
				return fmt.Errorf("%s, round %d: %w", e.name, i, err)
			}
		}
	}
	for _, e := range entries {
		if e.f != nil {
			e.res.FirstRequest = distOf(e.lat)
			var rss int64
			for _, pid := range e.f.heldPIDs(ctx) {
				rss += treeRSS(pid)
			}
			e.res.IdleRSSMiB = mib(rss)
			r.logf("follow-up %s: first request p50 %.1f / p95 %.1f ms (%d runs); idle RSS %.1f MiB",
				e.name, e.res.FirstRequest.P50, e.res.FirstRequest.P95, e.res.FirstRequest.N, e.res.IdleRSSMiB)
		}
		r.report.FollowUp = append(r.report.FollowUp, e.res)
	}
	return nil
}

// treeRSS is the resident memory of pid and its descendants.
func treeRSS(pid int) int64 {
	m, err := memoryOf(pid)
	if err != nil {
		return 0
	}
	total := m.RSS
	tasks, _ := os.ReadDir(procPath(pid, "task"))
	for _, t := range tasks {
		b, err := os.ReadFile(procPath(pid, "task/"+t.Name()+"/children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				total += treeRSS(child)
			}
		}
	}
	return total
}

// ---- familiar: task/create, then task/send on the finished task ----

func (c *familiarContender) followUp(ctx context.Context, i int, text string) (time.Time, error) {
	sent := time.Now()
	if c.taskID == "" {
		var t protocol.Task
		if err := c.client.Call(ctx, protocol.MethodTaskCreate, protocol.TaskCreateParams{
			Title: "follow-up", Description: text, Driver: c.driver}, &t); err != nil {
			return time.Time{}, err
		}
		c.taskID = t.ID
		return sent, nil
	}
	// task/send answers once the follow-up is typed (PTY) or queued for a
	// new claude: the clock starts before the call, as a client's would.
	return sent, c.client.Call(ctx, protocol.MethodTaskSend, protocol.TaskSendParams{ID: c.taskID, Text: text}, nil)
}

func (c *familiarContender) turnDone(ctx context.Context) error {
	var err error
	_, c.next, err = c.notes.wait(ctx, c.next, "task/completed", func(n clientNote) bool {
		if n.method != protocol.NotifyTaskCompleted {
			return false
		}
		var d protocol.TaskCompletedNotification
		return json.Unmarshal(n.params, &d) == nil && d.ID == c.taskID && d.Result.Success
	})
	return err
}

func (c *familiarContender) heldPIDs(ctx context.Context) []int {
	// A cold task's claude is on its way out when the turn has just ended
	// (its round may be the last): what it holds between turns is what is
	// left once it went, so wait for that, within a deadline.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var t protocol.Task
		if err := c.client.Call(ctx, protocol.MethodTaskGet, protocol.TaskIDParams{ID: c.taskID}, &t); err != nil || t.Agent == nil || t.Agent.PID == 0 {
			return nil
		}
		if _, err := memoryOf(t.Agent.PID); err != nil {
			return nil // let go (cold): nothing held
		}
		if !c.cold {
			return []int{t.Agent.PID}
		}
		select {
		case <-ctx.Done():
			return []int{t.Agent.PID}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ---- the ACP adapter: session/prompt on its session ----

func (a *acpContender) followUp(ctx context.Context, i int, text string) (time.Time, error) {
	sent := time.Now()
	id, err := a.request("session/prompt", map[string]any{"sessionId": a.session,
		"prompt": []any{map[string]any{"type": "text", "text": text}}})
	a.prompt = id
	return sent, err
}

func (a *acpContender) turnDone(ctx context.Context) error {
	_, err := a.response(ctx, a.prompt)
	return err
}

func (a *acpContender) heldPIDs(context.Context) []int { return []int{a.cmd.Process.Pid} }
