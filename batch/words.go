package batch

import "github.com/familiar-dev/familiar/protocol"

// Statuses in words (issue 26): what `familiar run` and `familiar demo`
// print for a person. The protocol's names stay as they are in the JSON
// report; "merging" in particular is a finished task whose work waits to
// be merged, which "[merging]" told nobody.

// statusWords says a task's status; nothing says a finished task that
// changed nothing (there is nothing to merge then).
func statusWords(st protocol.Status, nothing bool) string {
	if st == protocol.StatusMerging && nothing {
		return "finished, nothing to merge"
	}
	return st.Words()
}

// activityWords says what a working agent does.
func activityWords(a protocol.Activity) string {
	switch a {
	case protocol.ActivityRunningCommand:
		return "running a command"
	case protocol.ActivityUnknown:
		return ""
	}
	return string(a)
}

// queueItemWords says where a task is in the merge queue.
func queueItemWords(s protocol.QueueItemState) string {
	switch s {
	case protocol.QueueItemHandedBack:
		return "handed back to its agent"
	case protocol.QueueItemUpdating:
		return "building its merge with the base"
	case protocol.QueueItemVerifying:
		return "verifying"
	case protocol.QueueItemWaiting:
		return "waiting its turn"
	}
	return string(s)
}
