package profiles

import (
	"fmt"

	"github.com/familiar-dev/familiar/errkind"
)

// The kinds of error this package returns; test with errors.Is.
var (
	// ErrNotFound: no profile or skill has the name asked for. Its kind is
	// Invalid: the name came in a request, which is what has to change.
	ErrNotFound error = errkind.New(errkind.Invalid, "not found")
	// ErrInvalid: a profile or skill file, a mode, or a request is malformed.
	ErrInvalid error = errkind.New(errkind.Invalid, "invalid")
)

// FileError is a profile or skill file that could not be used. Its text is
// "path:line: message" so an editor can jump to it; Line is 0 when the
// problem is the file as a whole (unreadable, too large).
type FileError struct {
	Path    string
	Line    int
	Message string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Message)
}

// Unwrap makes every FileError an ErrInvalid.
func (e *FileError) Unwrap() error { return ErrInvalid }
