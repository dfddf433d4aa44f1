package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// ServeStdio serves one client on in/out (familiar serve --stdio) until the
// client closes in, sends exit, or ctx is done. out receives frames only.
//
// To stop reading, ServeStdio sets a past read deadline on in if it supports
// one and closes it if it is an io.Closer. A blocking os.Stdin supports
// neither in a way that interrupts a read in progress, so jsonrpc2's read
// goroutine may outlive ServeStdio until that read returns; the process is
// exiting by then. out is never closed.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.ServeConn(ctx, &stdioConn{in: in, out: out})
}

type stdioConn struct {
	in  io.Reader
	out io.Writer
}

func (c *stdioConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error) { return c.out.Write(p) }

func (c *stdioConn) Close() error {
	interruptRead(c.in)
	if cl, ok := c.in.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

type readDeadliner interface{ SetReadDeadline(time.Time) error }

// interruptRead makes a read in progress on r return, if r allows it.
func interruptRead(r io.Reader) bool {
	d, ok := r.(readDeadliner)
	return ok && d.SetReadDeadline(time.Unix(1, 0)) == nil
}

// ErrSocketInUse is returned (wrapped) by Listen when a live familiar already
// listens on the socket; the caller can Forward to it instead.
var ErrSocketInUse = errors.New("another familiar is already listening on the socket")

// SocketRecheck is how often a Listener looks whether its socket file is
// still there (see Listen). A cleaner deletes it rarely (macOS's after 3
// days untouched under $TMPDIR), so a few seconds' wait for the next client
// then is fine; one lstat per period costs nothing.
const SocketRecheck = 5 * time.Second

// Listener accepts clients on a unix socket; see Server.Listen.
type Listener struct {
	srv     *Server
	path    string
	recheck time.Duration
	cancel  context.CancelFunc

	relisten sync.Mutex // held by relistenIfGone: the watcher and the accept loop may both find the file gone

	mu      sync.Mutex
	ln      *net.UnixListener // guarded by mu: the one accepting now
	file    fs.FileInfo       // guarded by mu: ln's socket file, so Close removes only ours
	closed  bool              // guarded by mu: ctx done or Close called
	problem string            // guarded by mu: why the last relisten failed, logged once

	wg        sync.WaitGroup // the accept loops, the watcher, every connection
	closeOnce sync.Once
}

// Listen binds addr ("unix:PATH") with mode 0600 and serves every client
// that connects, each with ServeConn, until ctx is done or Close is called.
// All of them receive the Hub's notifications once initialized.
//
// The socket is bound under a random name in the same directory, chmod'ed
// to 0600 and then renamed to PATH, so it is never reachable at PATH with
// the umask's looser mode. A stale socket at PATH (nobody accepting) is
// replaced; a live one makes Listen fail with ErrSocketInUse; anything that
// is not a socket is left alone and is an error.
//
// A socket file deleted under a listening socket leaves it unreachable
// (macOS's tmp cleaners do that to sockets untouched for 3 days): every
// SocketRecheck, and when accepting fails, the Listener looks whether PATH
// is still its socket, and when it is gone it listens again there, saying
// so in the log.
func (s *Server) Listen(ctx context.Context, addr string) (*Listener, error) {
	return s.listen(ctx, addr, SocketRecheck)
}

func (s *Server) listen(ctx context.Context, addr string, recheck time.Duration) (*Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok || path == "" {
		return nil, fmt.Errorf("listen address %q is not of the form unix:PATH", addr)
	}
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := checkExisting(path); err != nil {
		return nil, err
	}
	ln, file, err := listenPrivate(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Listener{srv: s, path: path, recheck: recheck, ln: ln, file: file, cancel: cancel}
	l.wg.Add(3)
	go func() {
		defer l.wg.Done()
		<-ctx.Done()
		l.mu.Lock()
		l.closed = true
		l.ln.Close() // unblocks Accept
		l.mu.Unlock()
	}()
	go func() {
		defer l.wg.Done()
		l.accept(ctx, ln)
	}()
	go func() {
		defer l.wg.Done()
		l.watch(ctx)
	}()
	s.log.Info("listening", "socket", path)
	return l, nil
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Close stops accepting, closes every connection, waits for them to end and
// removes the socket file. It must be called even after ctx is done (that
// stops serving but leaves the socket file); it may be called more than once.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.cancel()
		l.wg.Wait()
		l.mu.Lock()
		file := l.file
		l.mu.Unlock()
		if fi, statErr := os.Lstat(l.path); statErr == nil && os.SameFile(fi, file) {
			err = os.Remove(l.path)
		}
	})
	return err
}

func (l *Listener) accept(ctx context.Context, ln *net.UnixListener) {
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: retrying at once would
			// spin, so back off a little, up to a second.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.srv.log.Warn("accepting a client failed", "err", err, "retryIn", backoff)
			if l.relistenIfGone(ctx) {
				return // a new accept loop serves the new socket
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := l.srv.ServeConn(ctx, conn); err != nil {
				l.srv.log.Warn("client connection ended with an error", "err", err)
			}
		}()
	}
}

// watch looks every recheck whether the socket file is still ours.
func (l *Listener) watch(ctx context.Context) {
	t := time.NewTicker(l.recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.relistenIfGone(ctx)
		}
	}
}

// relistenIfGone listens again at the socket's path when the file there is
// no longer the socket this Listener accepts on: deleted (alone or with its
// directory) or replaced by a stale one. A live socket of someone else, or
// a file that is not a socket, is left alone and logged once. It reports
// whether a new socket now accepts (the old one is closed).
func (l *Listener) relistenIfGone(ctx context.Context) bool {
	l.relisten.Lock()
	defer l.relisten.Unlock()
	l.mu.Lock()
	file := l.file
	l.mu.Unlock()
	fi, err := os.Lstat(l.path)
	if err == nil && os.SameFile(fi, file) {
		return false
	}
	why := "deleted"
	if err == nil {
		why = "replaced"
	}
	ln, newFile, err := func() (*net.UnixListener, fs.FileInfo, error) {
		if err := privateDir(filepath.Dir(l.path)); err != nil {
			return nil, nil, err
		}
		if err := checkExisting(l.path); err != nil {
			return nil, nil, err
		}
		return listenPrivate(l.path)
	}()
	l.mu.Lock()
	if err != nil {
		problem := err.Error()
		logIt := problem != l.problem
		l.problem = problem
		l.mu.Unlock()
		if logIt {
			l.srv.log.Error("the socket file is gone and listening there again failed; new clients cannot connect", "socket", l.path, "was", why, "err", err)
		}
		return false
	}
	if l.closed || ctx.Err() != nil {
		l.mu.Unlock()
		ln.Close()
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, newFile) {
			os.Remove(l.path)
		}
		return false
	}
	old := l.ln
	l.ln, l.file, l.problem = ln, newFile, ""
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.accept(ctx, ln)
	}()
	l.mu.Unlock()
	old.Close() // its file is not unlinked (listenPrivate): it is the new one's path
	l.srv.log.Warn("the socket file was "+why+" under the listening familiar; listening there again", "socket", l.path)
	return true
}

// checkExisting refuses to take over PATH unless it is free or a stale socket.
func checkExisting(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; not replacing it", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil // stale: nobody accepts; listenPrivate's rename replaces it
	}
	conn.Close()
	return fmt.Errorf("%s: %w", path, ErrSocketInUse)
}

func listenPrivate(path string) (*net.UnixListener, fs.FileInfo, error) {
	// Short, because a socket path is limited to ~104 bytes.
	tmp := filepath.Join(filepath.Dir(path), ".f"+rand.Text()[:8])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	// The file will be at path, not tmp; Close removes it itself.
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (*net.UnixListener, fs.FileInfo, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, fi, nil
}

// Forward joins stdio to the familiar already listening on socketPath (how
// a second familiar serve --stdio for the same repository joins the running
// daemon): bytes from in go to the socket and bytes from the socket go to
// out, unchanged — framing is the daemon's business.
//
// When in ends, Forward half-closes the socket; the daemon answers the
// requests it has read and closes, and Forward returns nil. When the daemon
// closes (or ctx is done, which returns ctx.Err()), Forward returns at once;
// it stops its reader of in by setting a past read deadline when in supports
// one, and otherwise leaves it blocked in a read that cannot be interrupted
// (a blocking os.Stdin) — that goroutine ends at the next read, and the
// process exits after Forward anyway. Forward never closes in or out.
func Forward(ctx context.Context, socketPath string, in io.Reader, out io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return fmt.Errorf("connecting to familiar at %s: %w", socketPath, err)
	}
	return ForwardConn(ctx, c.(*net.UnixConn), in, out)
}

// ForwardConn is Forward over a connection already made (the daemon package
// connects, starting the daemon if needed). It closes conn.
func ForwardConn(ctx context.Context, conn *net.UnixConn, in io.Reader, out io.Writer) error {
	socketPath := conn.RemoteAddr().String()
	defer conn.Close()
	var err error

	upDone := make(chan struct{})
	go func() { // in → daemon
		defer close(upDone)
		io.Copy(conn, in)
		// The daemon treats this like the end of stdin: it finishes what it
		// has and closes, which ends the other pump.
		conn.CloseWrite()
	}()
	downDone := make(chan error, 1)
	go func() { // daemon → out
		_, err := io.Copy(out, conn)
		downDone <- err
	}()

	select {
	case err = <-downDone:
	case <-ctx.Done():
		conn.Close()
		<-downDone
		err = ctx.Err()
	}
	conn.Close() // a pending write from in now fails
	if interruptRead(in) {
		<-upDone
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("forwarding from familiar at %s: %w", socketPath, err)
	}
	return err
}

// PeekInitialize reads the first frame from r and, when it is an initialize
// request, returns its workspaceRoot. frame holds the bytes read, headers
// included, to be replayed to whoever serves the connection (the daemon the
// forwarder picks by that root, or this process). An error means the first
// frame could not be read whole; frame still holds what was read.
func PeekInitialize(r *bufio.Reader) (frame []byte, workspaceRoot string, err error) {
	f, err := ReadFirstFrame(r)
	return f.Bytes, f.WorkspaceRoot, err
}

// FirstFrame is the first message a client sent, read whole by a forwarder.
type FirstFrame struct {
	// Bytes are the frame as read, headers included, to be replayed.
	Bytes []byte
	// Method is the message's method, "" if it has none or is not JSON.
	Method string
	// Request is set when the message has an id: it will be answered.
	Request bool
	// WorkspaceRoot is an initialize request's params.workspaceRoot.
	WorkspaceRoot string
}

// ReadFirstFrame reads one frame from r. An error means the frame could not
// be read whole; Bytes still holds what was read.
func ReadFirstFrame(r *bufio.Reader) (FirstFrame, error) {
	var buf bytes.Buffer
	length := -1
	for {
		line, err := r.ReadString('\n')
		buf.WriteString(line)
		if err != nil {
			return FirstFrame{Bytes: buf.Bytes()}, err
		}
		if buf.Len() > maxHeaderBytes {
			return FirstFrame{Bytes: buf.Bytes()}, errors.New("frame headers too long")
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if length < 0 || length > MaxFrameSize {
		return FirstFrame{Bytes: buf.Bytes()}, fmt.Errorf("bad Content-Length %d", length)
	}
	body := make([]byte, length)
	n, err := io.ReadFull(r, body)
	buf.Write(body[:n])
	f := FirstFrame{Bytes: buf.Bytes()}
	if err != nil {
		return f, err
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		return f, nil // not a request: whoever serves it answers -32700
	}
	f.Method = req.Method
	f.Request = len(req.ID) > 0 && !bytes.Equal(req.ID, []byte("null"))
	if req.Method == protocol.MethodInitialize {
		var p struct {
			WorkspaceRoot string `json:"workspaceRoot"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			f.WorkspaceRoot = p.WorkspaceRoot
		}
	}
	return f, nil
}

// ForwardFirst sends a client's first request (frame, read whole) on conn
// and relays the first bytes of the answer to out. answered is false when
// conn ended before any byte came back: the familiar went away before it
// answered (killed, crashed, or stopping as it accepted), so the request
// may be sent again to another one. Once answered, forward the rest with
// ForwardConn. A familiar answers a request before it sends any
// notification to the connection, so the first bytes back are the answer's.
func ForwardFirst(ctx context.Context, conn net.Conn, frame []byte, out io.Writer) (answered bool, err error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(frame); err != nil {
		return false, err
	}
	buf := make([]byte, 32<<10)
	n, err := conn.Read(buf)
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return false, err
	}
	if _, err := out.Write(buf[:n]); err != nil {
		return true, err
	}
	return true, nil
}
