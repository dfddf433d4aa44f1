package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/errkind"
	"github.com/familiar-dev/familiar/protocol"
)

// Issue 38: initialize's errors go through protocol.ErrorOf: by their
// kind, with words a person can act on; an error of no kind is internal,
// its text kept for the log, not made a params error.
func TestInitializeMapsOpenErrorsByKind(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name string
		err  error
		code int
		says string
	}{
		{"a protocol error passes", protocol.InvalidParams("workspaceRoot", root+" is not a git repository"), protocol.CodeInvalidParams, "is not a git repository"},
		{"unavailable", protocol.Unavailable("familiar cannot make its data dir /x: permission denied"), protocol.CodeUnavailable, "cannot make its data dir"},
		{"a kind", fmt.Errorf("lock: %w", errkind.New(errkind.FailedPrecondition, "the repository is locked")), protocol.CodeFailedPrecondition, "the repository is locked"},
		{"no kind", errors.New("bolt: page 7 is broken"), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewService(func(context.Context, string) (*Workspace, error) { return nil, c.err }, nil, "test")
			_, err := s.Initialize(context.Background(), &protocol.InitializeParams{WorkspaceRoot: root})
			var pe *protocol.Error
			if c.code == 0 {
				if errors.As(err, &pe) || err == nil || !strings.Contains(err.Error(), "bolt: page 7") {
					t.Fatalf("an error of no kind became %v (%T): it is internal, for the wire to hide and the log to keep", err, err)
				}
				return
			}
			if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.says) {
				t.Fatalf("initialize = %v, want code %d saying %q", err, c.code, c.says)
			}
		})
	}
}
