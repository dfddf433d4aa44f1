package protocol

// The sets of statuses the server, familiar run, familiar acp and the
// extension each act on, named once here rather than re-derived at each
// site: a new Status is one row of statusTraits (TestEveryStatusHasTraits
// fails without it), and every site that asks one of these questions
// follows.

// statusTraits is what a Status means for the questions below.
type statusTraits struct {
	live, finished, resumable, undoable, holdsWorktree bool
	// words is how a person reads the status: the names are the
	// protocol's ("merging" is a finished task whose work waits to be
	// merged, which tells a person nothing).
	words string
}

var traitsOf = map[Status]statusTraits{
	StatusQueued:    {holdsWorktree: true, words: "queued"},
	StatusStarting:  {live: true, holdsWorktree: true, words: "starting"},
	StatusRunning:   {live: true, holdsWorktree: true, words: "working"},
	StatusWaiting:   {live: true, holdsWorktree: true, words: "waiting for an answer"},
	StatusPaused:    {resumable: true, words: "paused"},
	StatusMerging:   {finished: true, undoable: true, words: "ready to merge"},
	StatusMerged:    {finished: true, undoable: true, words: "merged"},
	StatusBlocked:   {finished: true, resumable: true, undoable: true, words: "blocked"},
	StatusCancelled: {finished: true, undoable: true, words: "cancelled"},
}

// Words says the status as a person reads it ("ready to merge" for
// merging); a status this familiar does not know is said as it is. A
// finished task that changed nothing (Result.NoChanges) is the caller's to
// say: "finished, nothing to merge".
func (s Status) Words() string {
	if w := traitsOf[s].words; w != "" {
		return w
	}
	return string(s)
}

// Live: the task's agent is starting or at work (starting, running,
// waiting on a question).
func (s Status) Live() bool { return traitsOf[s].live }

// Finished: the task's work is over, well or not (merging, merged, blocked,
// cancelled); its FinishedAt is set. familiar run waits for every task to
// be finished.
func (s Status) Finished() bool { return traitsOf[s].finished }

// Resumable: task/resume (or task/send) continues the task in its worktree
// and session (paused, blocked; a task blocked by the person's cancel is
// refused on its reason, not its status).
func (s Status) Resumable() bool { return traitsOf[s].resumable }

// Undoable: task/undo takes the task within the undo window (merging,
// merged, blocked, cancelled): its merge, or its commits, are stepped back.
func (s Status) Undoable() bool { return traitsOf[s].undoable }

// HoldsWorktree: work that will run in the task's worktree is queued or
// under way (queued, starting, running, waiting), so the worktree may not
// be removed nor the task retried under it; cancelling stops that work.
func (s Status) HoldsWorktree() bool { return traitsOf[s].holdsWorktree }
