package jsonrpc

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A cleaner deletes the socket file (macOS's tmp cleaners delete sockets
// untouched for 3 days), or its whole directory, under a listening
// familiar: the Listener notices on its next recheck, listens again at the
// same path and says so in its log; a client connected before keeps its
// connection, and a new client connects.
func TestListenerListensAgainWhenItsSocketIsDeleted(t *testing.T) {
	checkLeaks(t)
	for _, what := range []string{"file", "directory", "stale socket"} {
		t.Run(what, func(t *testing.T) {
			h := newHarness(t, 0)
			dir := filepath.Join(t.TempDir(), "run")
			path := filepath.Join(dir, "0123456789abcdef.sock")
			l, err := h.srv.listen(context.Background(), "unix:"+path, 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			before, _ := dial(t, l)
			before.initialize()

			switch what {
			case "file":
				err = os.Remove(path)
			case "directory":
				// Gone at once (a RemoveAll could race the Listener
				// making it again).
				gone := dir + ".gone"
				if err = os.Rename(dir, gone); err == nil {
					err = os.RemoveAll(gone)
				}
			case "stale socket":
				// Someone put a socket nobody accepts on in its place (made
				// beside it and renamed over it: the Listener may look at
				// any moment).
				other := filepath.Join(dir, "stale")
				var stale *net.UnixListener
				stale, err = net.ListenUnix("unix", &net.UnixAddr{Name: other, Net: "unix"})
				if err == nil {
					stale.SetUnlinkOnClose(false)
					stale.Close()
					err = os.Rename(other, path)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(waitTimeout)
			for {
				conn, err := net.Dial("unix", path)
				if err == nil {
					c := newClient(t, conn, conn, conn)
					c.initialize()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no familiar accepts on %s again: %v", path, err)
				}
				time.Sleep(5 * time.Millisecond) // polling a condition another goroutine changes
			}
			if m := before.call("task/get", map[string]any{"id": "x"}); m.Error == nil || m.Error.Code == 0 {
				t.Errorf("the client connected before got %+v", m)
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("socket dir %v, %v: want mode 0700", fi, err)
			}
			if !strings.Contains(h.logs.String(), "listening there again") {
				t.Errorf("the log does not say it listened again:\n%s", h.logs)
			}
			l.Close()
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("Close left the new socket file: %v", err)
			}
		})
	}
}

// A live socket of someone else at the path is left alone, and said once.
func TestListenerLeavesAnotherLiveSocketAlone(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	path := filepath.Join(t.TempDir(), "f.sock")
	l, err := h.srv.listen(context.Background(), "unix:"+path, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Made beside it and renamed over it: the Listener may look at any
	// moment.
	beside := filepath.Join(filepath.Dir(path), "other.sock")
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: beside, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	other.SetUnlinkOnClose(false)
	defer other.Close()
	if err := os.Rename(beside, path); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	deadline := time.Now().Add(waitTimeout)
	for strings.Count(h.logs.String(), "listening there again failed") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed relisten:\n%s", h.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Several rechecks later, still logged once.
	time.Sleep(50 * time.Millisecond)
	if n := strings.Count(h.logs.String(), "listening there again failed"); n != 1 {
		t.Errorf("logged %d times", n)
	}
	l.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Close removed the other socket: %v", err)
	}
}
