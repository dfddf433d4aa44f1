package mergequeue

import (
	"strings"
	"testing"
)

// The commits familiar writes read as a person's history: a checkpoint is
// named by what the agent said it did, a merge by the title, each once,
// with the trailer; Markdown and long lines do not reach a subject.
func TestCommitMessages(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"checkpoint from the summary", CheckpointMessage("Add OAuth", "Added the OAuth callback handler.\n\nAlso a test.", "t1"),
			"Added the OAuth callback handler\n\nAlso a test.\n\nFamiliar-Task: t1\n"},
		{"checkpoint, summary says nothing", CheckpointMessage("Add OAuth", "Done.", "t1"),
			"Work on Add OAuth\n\nDone.\n\nFamiliar-Task: t1\n"},
		{"checkpoint, summary is the title", CheckpointMessage("Add OAuth login now", "add oauth login now", "t1"),
			"Work on Add OAuth login now\n\nadd oauth login now\n\nFamiliar-Task: t1\n"},
		{"checkpoint, no summary", CheckpointMessage("Fix it", "", "t1"), "Work on Fix it\n\nFamiliar-Task: t1\n"},
		{"markdown heading", CheckpointMessage("T", "## **Rewrote** the `parser` fully", "t1"),
			"Rewrote the parser fully\n\nFamiliar-Task: t1\n"},
		{"merge", MergeMessage("Add OAuth", "Added it.", "t2"), "Add OAuth\n\nAdded it.\n\nFamiliar-Task: t2\n"},
		{"NUL dropped", MergeMessage("a\x00b", "", "t3"), "ab\n\nFamiliar-Task: t3\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	long := CheckpointMessage("T", strings.Repeat("é word ", 40), "t1")
	subject, _, _ := strings.Cut(long, "\n")
	if len(subject) > maxSubject || !strings.HasSuffix(subject, "…") {
		t.Errorf("long subject = %q (%d bytes)", subject, len(subject))
	}
}
