package agent

import "github.com/familiar-dev/familiar/errkind"

// StartError is Start's error when claude itself did not start (its options
// were fine): Transient says whether starting again may succeed (the spawn
// failed), as opposed to a start called off (the context was done), so the
// orchestrator decides a retry from the type rather than the text.
type StartError struct {
	Transient bool
	Err       error
}

func (e *StartError) Error() string { return "start claude: " + e.Err.Error() }

func (e *StartError) Unwrap() error { return e.Err }

// Kind is Unavailable: claude could not be had, whatever the request.
func (e *StartError) Kind() errkind.Kind { return errkind.Unavailable }
