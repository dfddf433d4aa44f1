package errkind_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/familiar-dev/familiar/errkind"
)

type conflict struct{ files []string }

func (c conflict) Error() string         { return "conflict" }
func (c conflict) Unwrap() error         { return errConflict }
func (c conflict) Conflicting() []string { return c.files }

var errConflict = errkind.New(errkind.Conflict, "conflict")

func TestKindOfAWrappedSentinel(t *testing.T) {
	full := errkind.NewReason(errkind.NotSaved, "store is full", "full")
	for _, c := range []struct {
		err    error
		kind   errkind.Kind
		reason string
		files  []string
	}{
		{nil, errkind.Internal, "", nil},
		{errors.New("boom"), errkind.Internal, "", nil},
		{fmt.Errorf("open: %w", errkind.New(errkind.NotFound, "not found")), errkind.NotFound, "", nil},
		{fmt.Errorf("save task: %w", full), errkind.NotSaved, "full", nil},
		{fmt.Errorf("merge: %w", conflict{files: []string{"a.go"}}), errkind.Conflict, "", []string{"a.go"}},
	} {
		if got := errkind.Of(c.err); got != c.kind {
			t.Errorf("Of(%v) = %v, want %v", c.err, got, c.kind)
		}
		if got := errkind.ReasonOf(c.err); got != c.reason {
			t.Errorf("ReasonOf(%v) = %q, want %q", c.err, got, c.reason)
		}
		if got := errkind.Conflicting(c.err); !slices.Equal(got, c.files) {
			t.Errorf("Conflicting(%v) = %v, want %v", c.err, got, c.files)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", full), full) {
		t.Error("a wrapped sentinel is not errors.Is itself")
	}
	if errkind.Kind(99).String() != "unknown" || errkind.FailedPrecondition.String() != "failed precondition" {
		t.Error("Kind.String")
	}
}
