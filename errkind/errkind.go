// Package errkind is the small fixed set of kinds a domain error carries
// (STYLE.md habit 6): invalid, not found, failed precondition, conflict,
// unavailable, and not saved. Packages declare their sentinels with New and
// wrap them with %w where they happen; the one boundary that turns errors
// into protocol errors (protocol.ErrorOf) asks an error its kind instead of
// knowing every package's sentinels. It imports nothing of familiar's.
package errkind

import "errors"

// Kind is what went wrong, as far as a client is concerned.
type Kind uint8

const (
	// Internal: none of the others; a client gets a fixed sentence and the
	// text goes to the log (it may hold paths or command lines).
	Internal Kind = iota
	// Invalid: a value the request gave is wrong (its field is named by the
	// caller, which knows the request).
	Invalid
	// NotFound: what the request names does not exist.
	NotFound
	// FailedPrecondition: the request is fine, the state forbids it now.
	FailedPrecondition
	// Conflict: changes collide (Conflicting says in which files).
	Conflict
	// Unavailable: something familiar needs is missing or busy (claude,
	// git, the data dir's lock); trying later may work.
	Unavailable
	// NotSaved: the store could not save, so nothing was done (Reason says
	// why: "full" or "unavailable").
	NotSaved
)

var names = [...]string{"internal", "invalid", "not found", "failed precondition", "conflict", "unavailable", "not saved"}

func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}

// Error is a sentinel of a kind: compared by identity (errors.Is), wrapped
// with context by whoever returns it.
type Error struct {
	kind   Kind
	msg    string
	reason string
}

// New returns a sentinel error of kind k.
func New(k Kind, msg string) *Error { return &Error{kind: k, msg: msg} }

// NewReason is New with a word a client may act on (Reason).
func NewReason(k Kind, msg, reason string) *Error { return &Error{kind: k, msg: msg, reason: reason} }

func (e *Error) Error() string { return e.msg }

// Kind is the sentinel's kind.
func (e *Error) Kind() Kind { return e.kind }

// Reason is the sentinel's word for clients ("" if none).
func (e *Error) Reason() string { return e.reason }

// Of is the kind of the first error in err's chain that says one (a
// sentinel of New, or any type with a Kind() Kind method); Internal if none
// does.
func Of(err error) Kind {
	var k interface{ Kind() Kind }
	if errors.As(err, &k) {
		return k.Kind()
	}
	return Internal
}

// ReasonOf is the reason of the first error in err's chain that gives one.
func ReasonOf(err error) string {
	var r interface{ Reason() string }
	if errors.As(err, &r) {
		return r.Reason()
	}
	return ""
}

// Conflicting lists the files of a Conflict: those of the first error in
// err's chain with a Conflicting() []string method (worktree.ConflictError).
func Conflicting(err error) []string {
	var c interface{ Conflicting() []string }
	if errors.As(err, &c) {
		return c.Conflicting()
	}
	return nil
}
