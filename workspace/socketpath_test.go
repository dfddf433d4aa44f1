package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A socket path too long for sun_path moves to a short, deterministic one
// under the temporary directory; a short one stays in the data dir.
func TestSocketPathFitsSunPath(t *testing.T) {
	macTmp := "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T"
	short := "/Users/ann/Library/Application Support/familiar/state/app-1a2b3c4d"
	long := "/Users/ann/Library/Application Support/familiar/state/customer-portal-frontend-web-1a2b3c4d"
	if got := socketPath(short, "darwin", macTmp); got != filepath.Join(short, "familiar.sock") {
		t.Errorf("short data dir: %s", got)
	}
	got := socketPath(long, "darwin", macTmp)
	if !strings.HasPrefix(got, filepath.Join(macTmp, "familiar-"+strconv.Itoa(os.Getuid()))+"/") || !strings.HasSuffix(got, ".sock") {
		t.Errorf("long data dir on macOS: %s", got)
	}
	if len(got) > sunPathMax("darwin") {
		t.Errorf("%s is %d bytes, over macOS's %d", got, len(got), sunPathMax("darwin"))
	}
	if again := socketPath(long, "darwin", macTmp); again != got {
		t.Errorf("not deterministic: %s then %s", got, again)
	}
	if other := socketPath(long+"x", "darwin", macTmp); other == got {
		t.Errorf("two data dirs share %s", got)
	}
	// The same 105-byte path fits Linux's 108.
	if len(filepath.Join(long, "familiar.sock")) > sunPathMax("linux") {
		t.Fatal("the example is too long for Linux too")
	}
	if got := socketPath(long, "linux", "/tmp"); got != filepath.Join(long, "familiar.sock") {
		t.Errorf("long data dir on Linux: %s", got)
	}
}
