// Package texts keeps the whole of every text familiar shows clipped, and
// hands it out again by reference, a page at a time.
//
// Two kinds of reference exist. "clip/<hash>" names a text familiar clipped
// (a question, a summary, a tool input over the clip size); Clip writes the
// whole text under the task's directory, named by its content's hash, so
// clipping the same text twice stores it once. "tool-results/<file>" names a
// tool output that claude itself persisted in the task's config dir (it puts
// outputs over ~30 KB in projects/<project>/<session>/tool-results/ and gives
// the model a preview with the path); ToolResultRef reads that path out of
// the preview.
//
// It never masks secrets: the caller masks what it sends. It never reads
// outside the two directories it was given.
package texts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Errors callers can test for with errors.Is.
var (
	ErrNotFound   = errors.New("no text with that reference")
	ErrInvalidRef = errors.New("not a text reference")
	ErrBadRange   = errors.New("offset outside the text")
)

// Reference prefixes.
const (
	clipPrefix       = "clip/"
	toolResultPrefix = "tool-results/"
)

// Store is one task's texts.
type Store struct {
	clipDir   string // where Clip writes
	configDir string // the task's CLAUDE_CONFIG_DIR, where claude persists tool results
}

// New returns the store of a task whose own directory is taskDir (clipped
// texts go in taskDir/texts) and whose claude config dir is configDir.
func New(taskDir, configDir string) *Store {
	return &Store{clipDir: filepath.Join(taskDir, "texts"), configDir: configDir}
}

// Clip returns text cut to at most max bytes (on a character boundary) and,
// when it cut, the reference of the whole, which it has stored.
func (s *Store) Clip(text string, max int) (clipped, ref string, err error) {
	if len(text) <= max {
		return text, "", nil
	}
	sum := sha256.Sum256([]byte(text))
	name := hex.EncodeToString(sum[:12])
	ref = clipPrefix + name
	if err := os.MkdirAll(s.clipDir, 0o700); err != nil {
		return "", "", fmt.Errorf("store clipped text: %w", err)
	}
	path := filepath.Join(s.clipDir, name+".txt")
	if _, err := os.Stat(path); err != nil {
		// Write then rename: a reader never sees half a text.
		tmp, err := os.CreateTemp(s.clipDir, name+".*.tmp")
		if err != nil {
			return "", "", fmt.Errorf("store clipped text: %w", err)
		}
		_, werr := tmp.WriteString(text)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(tmp.Name())
			return "", "", fmt.Errorf("store clipped text: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return "", "", fmt.Errorf("store clipped text: %w", err)
		}
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut], ref, nil
}

// Page is one page of a text.
type Page struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"nextOffset"`
	Size       int64  `json:"size"`
	// More is set when the text goes on after NextOffset.
	More bool `json:"more"`
}

// Read returns up to limit bytes of the text ref from offset, never ending
// inside a UTF-8 character.
func (s *Store) Read(ref string, offset int64, limit int) (Page, error) {
	path, err := s.path(ref)
	if err != nil {
		return Page{}, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Page{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
	}
	if err != nil {
		return Page{}, fmt.Errorf("read %s: %w", ref, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Page{}, fmt.Errorf("read %s: %w", ref, err)
	}
	p := Page{Offset: offset, Size: fi.Size()}
	if offset < 0 || offset > p.Size {
		return Page{}, fmt.Errorf("%w: offset %d, size %d", ErrBadRange, offset, p.Size)
	}
	if limit <= 0 {
		limit = 64 << 10
	}
	buf := make([]byte, min(int64(limit), p.Size-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return Page{}, fmt.Errorf("read %s: %w", ref, err)
	}
	buf = buf[:n]
	if end := offset + int64(n); end < p.Size {
		// Stop before a character the next page completes; a page always
		// makes progress unless limit is under 4 bytes.
		cut := len(buf)
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					cut = i
				}
				break
			}
		}
		buf = buf[:cut]
	}
	p.Data = string(buf)
	p.NextOffset = offset + int64(len(buf))
	p.More = p.NextOffset < p.Size
	return p, nil
}

var (
	clipName       = regexp.MustCompile(`^[0-9a-f]{24}$`)
	toolResultName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}\.txt$`)
)

// path maps a reference to its file, refusing anything that could leave the
// store's directories.
func (s *Store) path(ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, clipPrefix):
		name := strings.TrimPrefix(ref, clipPrefix)
		if !clipName.MatchString(name) {
			return "", fmt.Errorf("%w: %q", ErrInvalidRef, ref)
		}
		return filepath.Join(s.clipDir, name+".txt"), nil
	case strings.HasPrefix(ref, toolResultPrefix):
		name := strings.TrimPrefix(ref, toolResultPrefix)
		if !toolResultName.MatchString(name) || s.configDir == "" {
			return "", fmt.Errorf("%w: %q", ErrInvalidRef, ref)
		}
		// projects/<project>/<session>/tool-results/<name>: the names are
		// claude's random ids, unique across the task's sessions.
		matches, _ := filepath.Glob(filepath.Join(s.configDir, "projects", "*", "*", "tool-results", name))
		if len(matches) == 0 {
			return "", fmt.Errorf("%w: %s", ErrNotFound, ref)
		}
		return matches[0], nil
	}
	return "", fmt.Errorf("%w: %q (references start with %q or %q)", ErrInvalidRef, ref, clipPrefix, toolResultPrefix)
}

// persisted is how claude points at a tool output it saved (2.1.330):
// "<persisted-output>\nOutput too large (195.3KB). Full output saved to:
// /…/tool-results/b47jtqdpb.txt\n\nPreview (first 2KB): …".
var persisted = regexp.MustCompile(`Full output saved to: (\S*/tool-results/([A-Za-z0-9_-]{1,128}\.txt))`)

// ToolResultRef returns the reference of the whole output behind a tool
// result claude shortened, or "" when the result is whole.
func ToolResultRef(result string) string {
	if !strings.Contains(result, "<persisted-output>") {
		return ""
	}
	m := persisted.FindStringSubmatch(result)
	if m == nil {
		return ""
	}
	return toolResultPrefix + m[2]
}
