package jsonrpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The socket's directory is made private when missing, and one others can
// write to is refused: someone else could swap the socket there.
func TestListenMakesItsDirectoryPrivate(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	dir := filepath.Join(t.TempDir(), "familiar-1000")
	l, err := h.srv.Listen(context.Background(), "unix:"+filepath.Join(dir, "0123456789abcdef.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir %v, %v: want mode 0700", fi, err)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	_, err = h.srv.Listen(context.Background(), "unix:"+filepath.Join(open, "x.sock"))
	if err == nil || !strings.Contains(err.Error(), "not private") {
		t.Errorf("Listen in a world-writable dir: %v", err)
	}
}
