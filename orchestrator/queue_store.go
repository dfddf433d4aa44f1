package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
)

// The merge queue outlives familiar: its last state is in the store (the
// settings bucket, under queueSetting), written with every change, so a
// familiar started after a crash or a shutdown says what happened to a
// queue that was running (Queue.Interrupted, a warning, the audit's
// queue.ended), and queue/status and queue/undo still work on it.

const queueSetting = "mergeQueue"

// storedQueue is the queue as the store keeps it.
type storedQueue struct {
	Queue  protocol.Queue    `json:"queue"`
	Merged []string          `json:"merged,omitempty"`
	Moved  map[string]string `json:"moved,omitempty"`
	// Told: the interruption has been said to a client.
	Told bool `json:"told,omitempty"`
}

// queueSaveLocked writes the queue's state. mq.mu is held: saves go in
// the order of the changes.
func (o *Orchestrator) queueSaveLocked() {
	if o.mq.q == nil {
		return
	}
	b, err := json.Marshal(storedQueue{Queue: *o.mq.snapshotLocked(), Merged: o.mq.merged, Moved: o.mq.moved, Told: o.mq.told})
	if err != nil {
		o.logger.Error("encode merge queue", "err", err)
		return
	}
	if err := o.cfg.Store.PutSetting(context.Background(), queueSetting, b); err != nil {
		o.logger.Warn("save merge queue", "err", err)
	}
}

// loadQueue reads the last queue back. One that was running when familiar
// stopped is settled: its merges as the tasks now say (reconcileMerges ran
// first), the rest not merged, and the person told what was found.
func (o *Orchestrator) loadQueue(leftoverVerifies int) {
	b, err := o.cfg.Store.GetSetting(queueSetting)
	if err != nil {
		return
	}
	var sq storedQueue
	if err := json.Unmarshal(b, &sq); err != nil {
		o.logger.Warn("unreadable merge queue in the store", "err", err)
		return
	}
	q := sq.Queue
	o.mq.mu.Lock()
	o.mq.q, o.mq.merged, o.mq.moved, o.mq.told = &q, sq.Merged, sq.Moved, sq.Told
	if o.mq.moved == nil {
		o.mq.moved = map[string]string{}
	}
	o.mq.mu.Unlock()
	if q.State != protocol.QueueRunning && (q.Interrupted == "" || sq.Told) {
		return
	}
	var merged, notMerged []string
	crashed := q.State == protocol.QueueRunning
	// Read before the queue's lock: a task's view is not the queue's.
	landed := map[string]*mergeRecord{}
	for _, it := range q.Items {
		if a, err := o.get(it.TaskID); err == nil {
			if v := a.view(); v.T.Status == protocol.StatusMerged && v.merge != nil && !v.merge.At.Before(q.StartedAt) {
				landed[it.TaskID] = v.merge
			}
		}
	}
	snap := o.queueUpdate(func(q *protocol.Queue) {
		for i := range q.Items {
			it := &q.Items[i]
			if it.State != protocol.QueueItemMerged && it.State != protocol.QueueItemUndone {
				if m := landed[it.TaskID]; m != nil {
					v := struct{ merge *mergeRecord }{m}
					// Its merge landed before familiar stopped.
					it.State, it.Merge = protocol.QueueItemMerged, &protocol.QueueMerge{Before: v.merge.Before, After: v.merge.After}
					if !slices.Contains(o.mq.merged, it.TaskID) {
						o.mq.merged = append(o.mq.merged, it.TaskID)
					}
				}
			}
			switch it.State {
			case protocol.QueueItemMerged:
				merged = append(merged, it.Title)
				continue
			case protocol.QueueItemWaiting, protocol.QueueItemUpdating, protocol.QueueItemVerifying, protocol.QueueItemMerging:
				it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "familiar stopped before it was merged"
			}
			notMerged = append(notMerged, it.Title)
		}
		if crashed {
			q.State, q.Current, q.EndedAt = protocol.QueueCancelled, "", o.clk.Now().UTC()
			q.Interrupted = "familiar stopped (a crash) while this queue ran"
		}
		q.Interrupted = interruptedWords(q.Interrupted, q.BaseRef, merged, notMerged, leftoverVerifies)
		o.mq.told = true
		o.mq.running = false
	})
	if crashed {
		o.audit("", "queue.ended", "familiar", map[string]any{"queueId": snap.ID, "state": snap.State, "interrupted": true,
			"merged": nonNil(merged), "notMerged": nonNil(notMerged)})
	}
	o.mq.mu.Lock()
	o.mq.notice = snap.Interrupted
	o.mq.mu.Unlock()
	o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: snap.Interrupted})
}

// interruptedWords says what a person needs of a queue familiar stopped.
func interruptedWords(what, base string, merged, notMerged []string, verifies int) string {
	var b strings.Builder
	b.WriteString(what)
	b.WriteString(". ")
	if len(merged) > 0 {
		fmt.Fprintf(&b, "Merged into %s: %s. ", base, strings.Join(merged, ", "))
	} else {
		fmt.Fprintf(&b, "Nothing was merged into %s. ", base)
	}
	if len(notMerged) > 0 {
		fmt.Fprintf(&b, "Not merged: %s; queue them again to continue (queue/merge). ", strings.Join(notMerged, ", "))
	}
	if verifies > 0 {
		fmt.Fprintf(&b, "The verify command it left running was stopped. ")
	}
	return strings.TrimSpace(b.String())
}

// queueNotice says, once, to the first client that initializes, what
// happened to a queue familiar stopped.
func (o *Orchestrator) queueNotice() {
	o.mq.mu.Lock()
	notice := o.mq.notice
	o.mq.notice = ""
	o.mq.mu.Unlock()
	if notice != "" {
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: notice})
	}
}

// reconcileMerges settles, on start, every merge a previous familiar had
// begun (its intent recorded) but not recorded as done: the base holds the
// candidate (the ref moved before familiar stopped) → the task is merged,
// undoable as any merge; it does not → the task is as it was. Each is said
// in the log and to the clients.
func (o *Orchestrator) reconcileMerges() {
	for _, a := range o.actors() {
		intent := a.st.MergeIntent // read before the scheduler starts
		if intent == nil {
			continue
		}
		title := a.view().T.Title
		done, err := o.cfg.Repo.Contains(context.Background(), intent.Base, intent.After)
		if err != nil {
			o.logger.Warn("reconcile an interrupted merge", "task", a.id, "err", err)
		}
		in := inMergeSettled{done: done && err == nil}
		text := fmt.Sprintf("familiar stopped in the middle of merging %q into %s; %s does not have it, so the task is still ready to merge.", title, intent.Base, intent.Base)
		if in.done {
			res := mergeResultOf(*intent)
			in.merge = &mergeRecord{MergeResult: res, At: intent.At, Strategy: intent.Strategy}
			in.audit = map[string]any{"base": intent.Base, "before": intent.Before, "after": intent.After, "strategy": intent.Strategy, "recovered": true}
			if intent.QueueID != "" {
				in.audit["queueId"] = intent.QueueID
			}
			text = fmt.Sprintf("familiar stopped in the middle of merging %q into %s, after %s had moved: the task is merged (task/undo takes it back as usual).", title, intent.Base, intent.Base)
		}
		o.logger.Warn("interrupted merge settled", "task", a.id, "done", in.done)
		if _, err := a.call(context.Background(), in); err != nil {
			o.logger.Warn("reconcile an interrupted merge", "task", a.id, "err", err)
			continue
		}
		o.pub.publish(a.id, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: text})
	}
}
