package batch

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
)

// progress shows what the run does: on a terminal one live line per task
// (status, activity, elapsed) and an overall bar; elsewhere one plain line
// per event, for logs and CI.
type progress struct {
	out  io.Writer
	live bool
	ids  []string

	mu      sync.Mutex
	tasks   map[string]protocol.Task // guarded by mu; latest view
	started map[string]time.Time     // guarded by mu

	p       *mpb.Progress
	overall *mpb.Bar
	bars    map[string]*mpb.Bar
	done    map[string]bool
	// queue is each task's last state in the merge queue, so each change
	// is said once (event's goroutine only).
	queue map[string]protocol.QueueItemState
}

func newProgress(out io.Writer, live bool, ids []string, o *orchestrator.Orchestrator) *progress {
	pr := &progress{out: out, live: live, ids: ids, tasks: map[string]protocol.Task{},
		started: map[string]time.Time{}, bars: map[string]*mpb.Bar{}, done: map[string]bool{}}
	for _, id := range ids {
		if t, err := o.TaskGet(nil, &protocol.TaskIDParams{ID: id}); err == nil {
			pr.tasks[id] = *t
		}
	}
	if !live {
		return pr
	}
	pr.p = mpb.New(mpb.WithOutput(out), mpb.WithWidth(30), mpb.WithRefreshRate(150*time.Millisecond))
	for _, id := range ids {
		id := id
		pr.bars[id] = pr.p.New(1, mpb.NopStyle(),
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return pr.line(id) })),
		)
	}
	pr.overall = pr.p.AddBar(int64(len(ids)),
		mpb.PrependDecorators(decor.Name("overall "), decor.CountersNoUnit("%d/%d done")),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_MMSS)),
	)
	return pr
}

// line is one task's live line.
func (pr *progress) line(id string) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	t := pr.tasks[id]
	el := ""
	if s, ok := pr.started[id]; ok {
		el = time.Since(s).Round(time.Second).String()
	}
	act := activityOf(t)
	if t.Status == protocol.StatusWaiting && t.PendingQuestion != nil {
		act = "asks: " + oneLine(t.PendingQuestion.Text, 40)
	}
	return fmt.Sprintf("%-32s %-21s %-28s %6s", oneLine(t.Title, 32), taskWords(t), act, el)
}

func (pr *progress) event(m note) {
	switch m.method {
	case protocol.NotifyTaskUpdated:
		var n protocol.TaskUpdatedNotification
		if json.Unmarshal(m.params, &n) != nil || !pr.mine(n.Task.ID) {
			return
		}
		pr.update(n.Task)
	case protocol.NotifyQueueUpdated:
		var n protocol.QueueUpdatedNotification
		if json.Unmarshal(m.params, &n) != nil {
			return
		}
		if pr.queue == nil {
			pr.queue = map[string]protocol.QueueItemState{}
		}
		for _, it := range n.Queue.Items {
			if pr.queue[it.TaskID] == it.State {
				continue
			}
			pr.queue[it.TaskID] = it.State
			line := fmt.Sprintf("merge queue: %s %s", it.Title, queueItemWords(it.State))
			if it.State == protocol.QueueItemHandedBack || it.State == protocol.QueueItemBlocked {
				line += ": " + oneLine(it.Detail, 160)
			}
			pr.say(line)
		}
	case protocol.NotifyTaskQuestion:
		var n protocol.TaskQuestionNotification
		if json.Unmarshal(m.params, &n) == nil && pr.mine(n.ID) {
			pr.say(fmt.Sprintf("%s asks (%s): %s", n.ID, n.Question.Kind, oneLine(n.Question.Text, 120)))
		}
	case protocol.NotifyTaskQuestionResolved:
		var n protocol.TaskQuestionResolvedNotification
		if json.Unmarshal(m.params, &n) == nil && pr.mine(n.ID) {
			pr.say(fmt.Sprintf("%s answered by %s: %s", n.ID, n.DecidedBy, n.OptionID))
		}
	case protocol.NotifyServerMessage:
		var n protocol.ServerMessageNotification
		if json.Unmarshal(m.params, &n) == nil {
			pr.say(fmt.Sprintf("%s: %s", n.Level, n.Text))
		}
	}
}

// update shows a task's new state: a line when its status or activity
// changed since the last one shown.
func (pr *progress) update(t protocol.Task) {
	pr.mu.Lock()
	prev := pr.tasks[t.ID]
	pr.tasks[t.ID] = t
	if _, ok := pr.started[t.ID]; !ok && t.Status == protocol.StatusStarting {
		pr.started[t.ID] = time.Now()
	}
	pr.mu.Unlock()
	if prev.Status != t.Status || prev.Activity != t.Activity {
		pr.plain("%s %s %s", t.ID, taskWords(t), activityOf(t))
	}
	pr.finish(t)
}

func activityOf(t protocol.Task) string {
	if t.Status == protocol.StatusRunning {
		return activityWords(t.Activity)
	}
	return ""
}

// taskWords is a task's status in words.
func taskWords(t protocol.Task) string {
	return statusWords(t.Status, t.Result != nil && t.Result.NoChanges)
}

func (pr *progress) mine(id string) bool {
	for _, x := range pr.ids {
		if x == id {
			return true
		}
	}
	return false
}

func (pr *progress) finish(t protocol.Task) {
	if !t.Status.Finished() {
		return
	}
	if pr.done[t.ID] {
		return
	}
	pr.done[t.ID] = true
	if pr.live {
		pr.bars[t.ID].SetCurrent(1)
		pr.overall.Increment()
	}
}

// plain prints one line per event when not on a terminal.
func (pr *progress) plain(format string, args ...any) {
	if pr.live {
		return
	}
	fmt.Fprintf(pr.out, "%s %s\n", time.Now().Format("15:04:05"), strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// say prints a message above the live lines, or as a plain line.
func (pr *progress) say(s string) {
	if pr.live {
		fmt.Fprintln(pr.p, s)
		return
	}
	pr.plain("%s", s)
}

func (pr *progress) close() {
	if !pr.live {
		return
	}
	for id, b := range pr.bars {
		if !pr.done[id] {
			b.Abort(false)
		}
	}
	if !pr.overall.Completed() {
		pr.overall.Abort(false)
	}
	pr.p.Wait()
}
