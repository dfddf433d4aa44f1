package agent

import "github.com/familiar-dev/familiar/mailbox"

// emitter delivers events to the caller's handler in order, from one
// goroutine, so a slow handler never blocks the PTY reader or a hook call.
// Consecutive output events are merged while they wait.
type emitter struct {
	box *mailbox.Mailbox[Event]
}

// maxMergedOutput bounds how much output one merged event carries.
const maxMergedOutput = 64 << 10

func newEmitter(fn func(Event)) *emitter {
	return &emitter{box: mailbox.New(mailbox.Options[Event]{
		Handle: func(batch []Event) {
			if fn == nil {
				return
			}
			for _, ev := range batch {
				fn(ev)
			}
		},
		Merge: mergeOutput,
	})}
}

// mergeOutput folds an output chunk into the output event queued before it.
func mergeOutput(last *Event, next Event) bool {
	if last.Kind != EventOutput || next.Kind != EventOutput || len(last.Output)+len(next.Output) > maxMergedOutput {
		return false
	}
	last.Output = append(last.Output, next.Output...)
	return true
}

func (e *emitter) emit(ev Event) {
	if ev.Kind == EventOutput {
		// The caller reuses its buffer; the queued event owns a copy.
		ev.Output = append([]byte(nil), ev.Output...)
	}
	e.box.Push(ev)
}

// close delivers what is queued, then stops and waits for the goroutine.
func (e *emitter) close() { e.box.Close() }
