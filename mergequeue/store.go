package mergequeue

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

// saveLocked writes the queue's state. m.mu is held: saves go in
// the order of the changes.
func (m *Queue) saveLocked() {
	if m.q == nil {
		return
	}
	b, err := json.Marshal(storedQueue{Queue: *m.snapshotLocked(), Merged: m.merged, Moved: m.moved, Told: m.told})
	if err != nil {
		m.logger.Error("encode merge queue", "err", err)
		return
	}
	if err := m.store.PutSetting(context.Background(), queueSetting, b); err != nil {
		m.logger.Warn("save merge queue", "err", err)
	}
}

// Load reads the last queue back. One that was running when familiar
// stopped is settled: its merges as the tasks now say (reconcileMerges ran
// first), the rest not merged, and the person told what was found.
func (m *Queue) Load(leftoverVerifies int) {
	b, err := m.store.GetSetting(queueSetting)
	if err != nil {
		return
	}
	var sq storedQueue
	if err := json.Unmarshal(b, &sq); err != nil {
		m.logger.Warn("unreadable merge queue in the store", "err", err)
		return
	}
	q := sq.Queue
	m.mu.Lock()
	m.q, m.merged, m.moved, m.told = &q, sq.Merged, sq.Moved, sq.Told
	if m.moved == nil {
		m.moved = map[string]string{}
	}
	m.mu.Unlock()
	if q.State != protocol.QueueRunning && (q.Interrupted == "" || sq.Told) {
		return
	}
	var merged, notMerged []string
	crashed := q.State == protocol.QueueRunning
	// Read before the queue's lock: a task's view is not the queue's.
	landed := map[string]*protocol.QueueMerge{}
	for _, it := range q.Items {
		if v, ok := m.host.Task(it.TaskID); ok && v.Status == protocol.StatusMerged && !v.MergedAt.Before(q.StartedAt) {
			landed[it.TaskID] = &protocol.QueueMerge{Before: v.MergedBefore, After: v.Merged}
		}
	}
	snap := m.update(func(q *protocol.Queue) {
		for i := range q.Items {
			it := &q.Items[i]
			if it.State != protocol.QueueItemMerged && it.State != protocol.QueueItemUndone {
				if done := landed[it.TaskID]; done != nil {
					// Its merge landed before familiar stopped.
					it.State, it.Merge = protocol.QueueItemMerged, done
					if !slices.Contains(m.merged, it.TaskID) {
						m.merged = append(m.merged, it.TaskID)
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
			q.State, q.Current, q.EndedAt = protocol.QueueCancelled, "", m.clk.Now().UTC()
			q.Interrupted = "familiar stopped (a crash) while this queue ran"
		}
		q.Interrupted = interruptedWords(q.Interrupted, q.BaseRef, merged, notMerged, leftoverVerifies)
		m.told = true
		m.running = false
	})
	if crashed {
		m.host.Audit("", "queue.ended", "familiar", map[string]any{"queueId": snap.ID, "state": snap.State, "interrupted": true,
			"merged": nonNil(merged), "notMerged": nonNil(notMerged)})
	}
	m.mu.Lock()
	m.notice = snap.Interrupted
	m.mu.Unlock()
	m.host.Publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: snap.Interrupted})
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

// Notice says, once, to the first client that initializes, what
// happened to a queue familiar stopped.
func (m *Queue) Notice() {
	m.mu.Lock()
	notice := m.notice
	m.notice = ""
	m.mu.Unlock()
	if notice != "" {
		m.host.Publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: notice})
	}
}
