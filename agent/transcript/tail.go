package transcript

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Tail follows a transcript file as the CLI appends to it and hands every
// complete line to its function, in order. The file may not exist yet.
//
// The CLI buffers its transcript writes: a line can land after the hook that
// reports the same moment. So a Tail reads when the file changes (fsnotify),
// when poked (every hook), when synced (before a turn is reported ended) and,
// as a fallback where fsnotify is unavailable, every pollEvery.
type Tail struct {
	path string
	fn   func(line []byte)

	poke chan struct{} // 1-buffered
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // serialises reads; fn runs under it
	off     int64      // guarded by mu
	partial []byte     // guarded by mu
}

// pollEvery is the fallback read interval.
const pollEvery = time.Second

// maxLine bounds one transcript line kept while incomplete (a huge tool
// result); a longer one is dropped.
const maxLine = 64 << 20

// NewTail follows path from byte offset off (the size it had before this
// session's process started, for a resumed session) and calls fn with each
// line. Close stops it.
func NewTail(path string, off int64, fn func(line []byte)) *Tail {
	t := &Tail{path: path, fn: fn, off: off, poke: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// Size returns the current size of path (0 if it does not exist): the offset
// to start a resumed session's tail at.
func Size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Path is the file followed.
func (t *Tail) Path() string { return t.path }

// Poke asks for a read soon, without waiting for it.
func (t *Tail) Poke() {
	select {
	case t.poke <- struct{}{}:
	default:
	}
}

// Sync reads everything the file holds now, before returning.
func (t *Tail) Sync() { t.read() }

// Close reads what is left, stops following and waits until fn is no longer
// called.
func (t *Tail) Close() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}

func (t *Tail) run() {
	defer close(t.done)
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		dir := filepath.Dir(t.path)
		if err := os.MkdirAll(dir, 0o700); err == nil && w.Add(dir) == nil {
			events = w.Events
		}
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			t.read()
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Name != t.path {
				continue
			}
		case <-t.poke:
		case <-tick.C:
		}
		t.read()
	}
}

// read hands every complete line appended since the last read to fn.
func (t *Tail) read() {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.Open(t.path)
	if err != nil {
		return // not written yet
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < t.off {
		// Truncated or replaced: start over rather than read garbage.
		t.off, t.partial = 0, nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			t.off += int64(n)
			t.consume(buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, fs.ErrClosed) {
				return
			}
			return
		}
	}
}

func (t *Tail) consume(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(t.partial)+len(p) > maxLine {
				t.partial = nil // one giant line: drop it rather than hold it
				return
			}
			t.partial = append(t.partial, p...)
			return
		}
		line := p[:i]
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		}
		t.fn(line)
		p = p[i+1:]
	}
}

// ProjectDir is the folder the CLI keeps a working directory's sessions in,
// under its config dir: every character that is not a letter or digit
// becomes '-' (CLAUDE-CLI.md §6).
func ProjectDir(configDir, cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return filepath.Join(configDir, "projects", string(b))
}

// FilePath is where the CLI writes session id's transcript for cwd.
func FilePath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}
