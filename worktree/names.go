package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSlugLen bounds the title part of branch and directory names, so that a
// long title neither hits filesystem name limits nor makes branch lists
// unreadable.
const maxSlugLen = 40

// shortHashLen is the number of hex digits of the hashes in names: 32 bits is
// plenty to tell apart the tasks of one repository or the repositories of
// one user, and short enough to read.
const shortHashLen = 8

// slugify returns the branch- and path-safe form of a task title: lowercase
// ASCII letters and digits, every other run of characters one "-", no "-" at
// either end, at most maxSlugLen bytes, cut at a word boundary when there is
// one. It is "" when the title has no ASCII letter or digit (e.g. a title in
// another script); callers refuse that.
func slugify(title string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(title) {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte('-')
		}
		b.WriteRune(r)
		gap = false
		if b.Len() > maxSlugLen {
			break // one byte past the bound tells whether the cut splits a word
		}
	}
	s := b.String()
	if len(s) <= maxSlugLen {
		return s
	}
	cut := s[:maxSlugLen]
	if s[maxSlugLen] != '-' {
		if i := strings.LastIndexByte(cut, '-'); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimRight(cut, "-")
}

// shortID is the task's part of branch and directory names, so that what
// git branch shows leads to the task: the id itself when it is short and
// made only of letters, digits, "_" and "-" (familiar's ids are), else a
// hash of it (ids from elsewhere may hold "/" or spaces). The full id is kept
// in the worktree's metadata too.
func shortID(taskID string) string {
	if plainID(taskID) {
		return taskID
	}
	return shortHash(taskID)
}

// maxIDInName bounds a task id used as is in names.
const maxIDInName = 40

func plainID(id string) bool {
	if id == "" || len(id) > maxIDInName || id[0] == '-' || strings.HasSuffix(id, ".lock") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:shortHashLen]
}

// validTaskID refuses ids that could not be stored or shown safely.
func validTaskID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty task id", ErrInvalid)
	case !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("%w: task id %q has control characters or invalid UTF-8", ErrInvalid, id)
	}
	return nil
}

// validRef refuses a ref given by a user before git sees it. Besides git's
// own rules it refuses a leading "-" (git would read it as an option) and
// "..": a range, not a commit.
func validRef(what, ref string) error {
	switch {
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("%w: %s %q must not start with %q", ErrInvalid, what, ref, "-")
	case strings.Contains(ref, ".."):
		return fmt.Errorf("%w: %s %q must not contain %q", ErrInvalid, what, ref, "..")
	case strings.ContainsFunc(ref, isControl):
		return fmt.Errorf("%w: %s %q must not contain control characters", ErrInvalid, what, ref)
	}
	if why := checkRefFormat(ref); why != "" {
		return fmt.Errorf("%w: %s %q is not a valid ref name: %s", ErrInvalid, what, ref, why)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkRefFormat reports why name fails `git check-ref-format
// --allow-onelevel`, or "" if it passes. It is the rules of git's
// check_refname_format (refs.c) in Go, because running git for it would add a
// process to every Create; a test checks it agrees with git.
func checkRefFormat(name string) string {
	switch {
	case name == "":
		return "empty"
	case name == "@":
		return `is "@"`
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return `begins or ends with "/"`
	case strings.HasSuffix(name, "."):
		return `ends with "."`
	case strings.Contains(name, "//"):
		return `contains "//"`
	case strings.Contains(name, ".."):
		return `contains ".."`
	case strings.Contains(name, "@{"):
		return `contains "@{"`
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return isControl(r) || strings.ContainsRune(" ~^:?*[\\", r)
	}); i >= 0 {
		return fmt.Sprintf("contains %q", name[i:i+1])
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") {
			return `a component begins with "."`
		}
		if strings.HasSuffix(c, ".lock") {
			return `a component ends with ".lock"`
		}
	}
	return ""
}
