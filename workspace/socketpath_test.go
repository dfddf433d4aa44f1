package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A socket path too long for sun_path moves to a short, deterministic one
// under ~/.familiar/run, never under $TMPDIR (which macOS empties of what
// was not touched for 3 days); a short one stays in the data dir.
func TestSocketPathFitsSunPath(t *testing.T) {
	home := "/Users/ann"
	short := "/Users/ann/Library/Application Support/familiar/state/app-1a2b3c4d"
	long := "/Users/ann/Library/Application Support/familiar/state/customer-portal-frontend-web-1a2b3c4d"
	if got := socketPath(short, "darwin", home); got != filepath.Join(short, "familiar.sock") {
		t.Errorf("short data dir: %s", got)
	}
	got := socketPath(long, "darwin", home)
	if !strings.HasPrefix(got, "/Users/ann/.familiar/run/") || !strings.HasSuffix(got, ".sock") {
		t.Errorf("long data dir on macOS: %s", got)
	}
	if len(got) > sunPathMax("darwin") {
		t.Errorf("%s is %d bytes, over macOS's %d", got, len(got), sunPathMax("darwin"))
	}
	if again := socketPath(long, "darwin", home); again != got {
		t.Errorf("not deterministic: %s then %s", got, again)
	}
	if other := socketPath(long+"x", "darwin", home); other == got {
		t.Errorf("two data dirs share %s", got)
	}
	// The same 105-byte path fits Linux's 108.
	if len(filepath.Join(long, "familiar.sock")) > sunPathMax("linux") {
		t.Fatal("the example is too long for Linux too")
	}
	if got := socketPath(long, "linux", "/home/ann"); got != filepath.Join(long, "familiar.sock") {
		t.Errorf("long data dir on Linux: %s", got)
	}
	// Linux takes the run dir too when the data dir is longer still.
	longer := "/home/ann/.local/state/familiar/" + strings.Repeat("n", 80) + "-1a2b3c4d"
	if got := socketPath(longer, "linux", "/home/ann"); !strings.HasPrefix(got, "/home/ann/.familiar/run/") {
		t.Errorf("long data dir on Linux: %s", got)
	}
	// No home, or one too long for the run dir: /tmp, not $TMPDIR, so that
	// every client names the same socket.
	tmp := filepath.Join("/tmp", "familiar-"+strconv.Itoa(os.Getuid())) + "/"
	for _, h := range []string{"", "relative", "/" + strings.Repeat("h", 90)} {
		if got := socketPath(long, "darwin", h); !strings.HasPrefix(got, tmp) || len(got) > sunPathMax("darwin") {
			t.Errorf("home %q: %s", h, got)
		}
	}
}

// A client with no $TMPDIR (an SSH login) or another one names the same
// socket as the familiar it looks for.
func TestSocketPathIgnoresTMPDIR(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	long := filepath.Join(t.TempDir(), strings.Repeat("r", 100)+"-1a2b3c4d")
	t.Setenv("TMPDIR", "/var/folders/zz/x/T")
	a := SocketPath(long)
	os.Unsetenv("TMPDIR")
	if b := SocketPath(long); a != b {
		t.Errorf("with $TMPDIR %s, without %s", a, b)
	}
	if want := RunDir(os.Getenv("HOME")); filepath.Dir(a) != want {
		t.Errorf("socket %s is not in %s", a, want)
	}
}
