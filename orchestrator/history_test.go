package orchestrator

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
		{"checkpoint from the summary", checkpointMessage("Add OAuth", "Added the OAuth callback handler.\n\nAlso a test.", "t1"),
			"Added the OAuth callback handler\n\nAlso a test.\n\nFamiliar-Task: t1\n"},
		{"checkpoint, summary says nothing", checkpointMessage("Add OAuth", "Done.", "t1"),
			"Work on Add OAuth\n\nDone.\n\nFamiliar-Task: t1\n"},
		{"checkpoint, summary is the title", checkpointMessage("Add OAuth login now", "add oauth login now", "t1"),
			"Work on Add OAuth login now\n\nadd oauth login now\n\nFamiliar-Task: t1\n"},
		{"checkpoint, no summary", checkpointMessage("Fix it", "", "t1"), "Work on Fix it\n\nFamiliar-Task: t1\n"},
		{"markdown heading", checkpointMessage("T", "## **Rewrote** the `parser` fully", "t1"),
			"Rewrote the parser fully\n\nFamiliar-Task: t1\n"},
		{"merge", mergeMessage("Add OAuth", "Added it.", "t2"), "Add OAuth\n\nAdded it.\n\nFamiliar-Task: t2\n"},
		{"NUL dropped", mergeMessage("a\x00b", "", "t3"), "ab\n\nFamiliar-Task: t3\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	long := checkpointMessage("T", strings.Repeat("é word ", 40), "t1")
	subject, _, _ := strings.Cut(long, "\n")
	if len(subject) > maxSubject || !strings.HasSuffix(subject, "…") {
		t.Errorf("long subject = %q (%d bytes)", subject, len(subject))
	}
}
