package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/familiar-dev/familiar/jsonrpc"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
)

// JoinOptions say where the daemon of a repository lives and how to start it.
type JoinOptions struct {
	DataDir string
	Socket  string
	// Version and ProtocolVersion are the joining binary's.
	Version         string
	ProtocolVersion int
	// Start starts a daemon in the background. exited, when not nil,
	// receives the process's end if it ends (so a daemon that fails at once
	// is reported rather than waited for).
	Start func() (exited <-chan error, err error)
	// Timeout bounds the whole join (default 2 minutes: a daemon that must
	// first stop an older one waits for its agents' grace period).
	Timeout time.Duration
	Logger  *slog.Logger
}

// MismatchError is returned by Join when the running daemon speaks another
// protocol version and cannot be replaced because it is busy.
type MismatchError struct {
	Mine, Theirs int
	TheirVersion string
	Busy         string
	DaemonPID    int
}

func (e *MismatchError) Error() string {
	msg := VersionMismatch(e.Mine, e.Theirs, e.TheirVersion).Message
	if e.Busy != "" {
		msg += " (it is busy: " + e.Busy + ")"
	}
	return msg
}

// poll is how often Join looks again at a condition another process
// changes (a socket starting to accept, a lock being released, a process
// exiting); none of them can be waited on directly.
const poll = 20 * time.Millisecond

// Join connects to the daemon of opts.DataDir, starting one if nobody
// listens. Starting is serialized by an flock on daemon.lock, so clients
// started at the same instant all end up on the one daemon the first of them
// started. A daemon of another version is replaced when it is idle (no
// client, nothing queued, running or waiting); when it is busy, Join joins
// it if it speaks the same protocol version and returns *MismatchError
// otherwise.
func Join(ctx context.Context, o JoinOptions) (*net.UnixConn, Info, error) {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	replaced := false
	for {
		conn, err := dialOrStart(ctx, o)
		if err != nil {
			return nil, Info{}, err
		}
		info, err := ReadInfo(o.DataDir)
		if err != nil {
			// A familiar serving in-process (serve --no-daemon, --listen)
			// publishes no info: join it as it is.
			o.Logger.Info("joined a familiar that publishes no daemon info", "err", err)
			return conn, Info{}, nil
		}
		if info.Version == o.Version && info.ProtocolVersion == o.ProtocolVersion {
			return conn, info, nil
		}
		mustMatch := info.ProtocolVersion != o.ProtocolVersion
		busy := ""
		if !replaced && (mustMatch || compareVersions(o.Version, info.Version) > 0) {
			res, err := requestStop(conn, true)
			if err != nil {
				return nil, info, fmt.Errorf("asking the familiar of version %s (pid %d) to make way: %w", info.Version, info.PID, err)
			}
			if res.Stopping {
				o.Logger.Info("replacing an idle familiar of another version", "mine", o.Version, "theirs", info.Version, "pid", info.PID)
				if err := WaitGone(ctx, info.PID); err != nil {
					return nil, info, err
				}
				replaced = true
				continue
			}
			busy = res.Busy
			if conn, err = dialFirst(ctx, Sockets(o.DataDir, o.Socket)); err != nil {
				return nil, info, err
			}
		}
		if !mustMatch {
			o.Logger.Warn("joining a familiar of another version", "mine", o.Version, "theirs", info.Version, "busy", busy)
			return conn, info, nil
		}
		conn.Close()
		return nil, info, &MismatchError{Mine: o.ProtocolVersion, Theirs: info.ProtocolVersion,
			TheirVersion: info.Version, Busy: busy, DaemonPID: info.PID}
	}
}

// WaitGone waits until the daemon pid has exited.
func WaitGone(ctx context.Context, pid int) error {
	for Alive(pid) {
		if err := sleep(ctx, poll); err != nil {
			return fmt.Errorf("the familiar (pid %d) did not exit: %w", pid, err)
		}
	}
	return nil
}

// Stop asks the daemon of dataDir to stop and waits until it has exited.
// It returns ErrNoDaemon when none runs.
func Stop(ctx context.Context, dataDir, socket string) (Info, error) {
	info, err := ReadInfo(dataDir)
	if err != nil {
		return info, err
	}
	conn, err := dialFirst(ctx, Sockets(dataDir, socket))
	if err != nil {
		return info, fmt.Errorf("connecting to the familiar (pid %d): %w", info.PID, err)
	}
	_, err = requestStop(conn, false)
	// The daemon may close the connection before its answer is out: that
	// is fine, its exit is what counts.
	if err != nil && !errors.Is(err, rpcclient.ErrClosed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
		return info, err
	}
	return info, WaitGone(ctx, info.PID)
}

// dialOrStart connects to the daemon, starting it under the start lock when
// nobody accepts on the socket.
func dialOrStart(ctx context.Context, o JoinOptions) (*net.UnixConn, error) {
	if c, err := dialOnce(o.DataDir, o.Socket); err == nil {
		return c, nil
	}
	unlock, err := lock(ctx, filepath.Join(o.DataDir, LockFile))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Whoever held the lock before us may have started it meanwhile.
	if c, err := dialOnce(o.DataDir, o.Socket); err == nil {
		return c, nil
	}
	// A familiar that published itself and does not accept has lost its
	// socket file (a cleaner deleted it) or is about to listen: it listens
	// again within SocketRecheck, and a second one would only fail on the
	// store's lock. Wait for it, a bounded time: its pid may be another
	// process's by now.
	if info, err := ReadInfo(o.DataDir); err == nil {
		o.Logger.Info("the background familiar does not accept on its socket; waiting for it to listen again",
			"pid", info.PID, "socket", info.Socket)
		deadline := time.Now().Add(3 * jsonrpc.SocketRecheck)
		for time.Now().Before(deadline) && Alive(info.PID) {
			if err := sleep(ctx, poll); err != nil {
				return nil, fmt.Errorf("the background familiar (pid %d) did not listen again on %s: %w", info.PID, info.Socket, err)
			}
			if c, err := dialOnce(o.DataDir, o.Socket); err == nil {
				return c, nil
			}
		}
		o.Logger.Warn("the background familiar did not listen again; starting another", "pid", info.PID)
	}
	// Retry: a daemon of this repository that is still shutting down holds
	// the store, and the new one then fails at once.
	for attempt := 1; ; attempt++ {
		o.Logger.Info("starting the background familiar", "dataDir", o.DataDir, "attempt", attempt)
		exited, err := o.Start()
		if err != nil {
			return nil, fmt.Errorf("starting the background familiar: %w", err)
		}
		for {
			if c, err := dialOnce(o.DataDir, o.Socket); err == nil {
				return c, nil
			}
			select {
			case err := <-exited:
				exited = nil
				msg := lastLine(filepath.Join(o.DataDir, ErrFile))
				if ctx.Err() != nil || attempt >= 5 {
					return nil, fmt.Errorf("the background familiar exited (%v): %s", err, msg)
				}
				o.Logger.Warn("the background familiar exited at once; retrying", "err", err, "stderr", msg)
			case <-ctx.Done():
				return nil, fmt.Errorf("the background familiar did not start listening on %s: %w", o.Socket, ctx.Err())
			case <-time.After(poll):
				continue
			}
			if err := sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return nil, err
			}
			break
		}
	}
}

// Sockets are where to look for the familiar of dataDir, in order: the
// socket its daemon.json names (a familiar of an older version, or with
// another home, listens elsewhere than this binary would put it), then
// socket, the path this binary computes.
func Sockets(dataDir, socket string) []string {
	if info, err := ReadInfo(dataDir); err == nil && info.Socket != "" && info.Socket != socket {
		return []string{info.Socket, socket}
	}
	return []string{socket}
}

// dialOnce tries each of Sockets(dataDir, socket) once.
func dialOnce(dataDir, socket string) (*net.UnixConn, error) {
	var first error
	for _, p := range Sockets(dataDir, socket) {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			return c.(*net.UnixConn), nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// dialFirst connects to the first of sockets that accepts.
func dialFirst(ctx context.Context, sockets []string) (*net.UnixConn, error) {
	var d net.Dialer
	var first error
	for _, p := range sockets {
		c, err := d.DialContext(ctx, "unix", p)
		if err == nil {
			return c.(*net.UnixConn), nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// lock takes an exclusive flock on path, polling until ctx is done. The lock
// is released by unlock, or by the kernel if this process dies.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("start lock: %w", err)
		}
		if err := sleep(ctx, poll); err != nil {
			f.Close()
			return nil, fmt.Errorf("waiting for another familiar to finish starting: %w", err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// requestStop sends server/stop on conn and returns the answer; conn is
// closed.
func requestStop(conn net.Conn, ifIdle bool) (*protocol.ServerStopResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := rpcclient.New(conn, nil)
	defer c.Close()
	return c.ServerStop(ctx, &protocol.ServerStopParams{IfIdle: ifIdle})
}

func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// compareVersions compares dotted numeric versions ("0.4.1"); a part that is
// not a number (a "dev" build) counts as 0.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
