package mergequeue

import (
	"strings"
	"unicode/utf8"
)

// The commits familiar writes are the person's history: what `git log
// --oneline` of the base shows after a merge. Per task and strategy
// (README, "A history people would write"):
//   - merge: one merge commit whose subject is the task's title, its body
//     the agent's summary and a Familiar-Task trailer; the task's own
//     commits (its checkpoints) below it, subjects from what the agent said
//     it did, never the title again;
//   - squash: one commit, the title and the same body;
//   - rebase: the task's commits, linear.
// No subject names one of familiar's internal branches.

// taskTrailer is the git trailer that ties a commit to its task.
const taskTrailer = "Familiar-Task: "

// maxSubject is the longest subject familiar writes (git's own advice is
// about 50; 72 is where tools cut).
const maxSubject = 72

// maxBody bounds the summary kept in a commit message.
const maxBody = 4000

// CheckpointMessage is the message of the commit that keeps a finished
// turn's work: its subject what the agent said it did (the summary's first
// line) when that says something, else "Work on <title>"; its body the rest
// of the summary and the trailer.
func CheckpointMessage(title, summary, id string) string {
	first, rest, _ := strings.Cut(strings.TrimSpace(summary), "\n")
	subject := plainLine(first)
	if len(strings.Fields(subject)) < 3 || strings.EqualFold(subject, strings.TrimSpace(title)) {
		subject, rest = "Work on "+plainLine(title), strings.TrimSpace(summary)
	}
	return commitMessage(subject, rest, id)
}

// MergeMessage is the message of the commit a merge adds to the base (the
// merge commit, or the squashed one): the title once, the summary, the
// trailer.
func MergeMessage(title, summary, id string) string {
	return commitMessage(plainLine(title), strings.TrimSpace(summary), id)
}

func commitMessage(subject, body, id string) string {
	if subject == "" {
		subject = "Task " + id
	}
	var b strings.Builder
	b.WriteString(clipRunes(subject, maxSubject))
	b.WriteString("\n\n")
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString(clipRunes(body, maxBody))
		b.WriteString("\n\n")
	}
	b.WriteString(taskTrailer + id + "\n")
	return strings.ReplaceAll(b.String(), "\x00", "")
}

// plainLine is one line of text as a subject: Markdown's heading and
// emphasis marks gone, spaces folded, no trailing full stop.
func plainLine(s string) string {
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "#>-* "))
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimSuffix(s, ".")
}

// clipRunes cuts s to at most n bytes at a character boundary, with "…".
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "…"
}
