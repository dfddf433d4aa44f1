package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/charmbracelet/x/vt"

	"github.com/familiar-dev/familiar/agent/screen"
)

// ScreenResult is the screen model alone taking a stream in 32 KiB writes.
type ScreenResult struct {
	Stream string  `json:"stream"`
	Model  string  `json:"model"`
	MB     float64 `json:"mb"`
	Sec    float64 `json:"sec"`
	MBps   float64 `json:"mbPerSec"`
	CPUSec float64 `json:"cpuSec"`
}

// Screen models compared.
const (
	// ModelBefore is the screen model as it was before the scroll elider:
	// the OSC filter writing straight into the emulator, default scrollback.
	ModelBefore = "before: OSC filter → vt emulator"
	// ModelAfter is screen.Screen as it is.
	ModelAfter = "after: screen.Screen (scroll elider)"
)

// screenModel compares the screen model before and after the scroll elider
// on lines (plain and coloured, as the fake agent writes them through a
// terminal) and on the recorded sessions of the real CLI.
func (r *runner) screenModel(ctx context.Context) error {
	streams := []struct {
		name   string
		data   []byte
		before int // bytes the slow model gets: it takes minutes for more
	}{
		{"plain lines", lineStream(16<<20, false), 2 << 20},
		{"colour lines", lineStream(16<<20, true), 2 << 20},
	}
	if tui, err := recordedTUI(r.moduleRoot); err == nil {
		streams = append(streams, struct {
			name   string
			data   []byte
			before int
		}{"recorded claude TUI ×20", bytes.Repeat(tui, 20), 0})
	} else {
		r.skip("screen model on recorded TUI output: " + err.Error())
	}
	for _, s := range streams {
		for _, model := range []string{ModelBefore, ModelAfter} {
			if err := ctx.Err(); err != nil {
				return err
			}
			data := s.data
			if model == ModelBefore && s.before > 0 {
				data = data[:s.before]
			}
			res := feedScreen(model, data)
			res.Stream = s.name
			r.report.ScreenModel = append(r.report.ScreenModel, res)
			r.logf("screen model %s, %s: %.1f MB in %.2f s = %.1f MB/s", s.name, model, res.MB, res.Sec, res.MBps)
		}
	}
	return nil
}

func feedScreen(model string, data []byte) ScreenResult {
	var w io.Writer
	var done func()
	switch model {
	case ModelBefore:
		emu := vt.NewEmulator(120, 40)
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, emu)
		}()
		w = screen.NewOSCFilter(emu)
		done = func() {
			_ = emu.Close()
			<-drained
		}
	default:
		s := screen.New(120, 40, nil)
		w = s
		done = func() {
			_ = s.Snapshot()
			_ = s.Close()
		}
	}
	cpu0, _ := cpuTime(0)
	start := time.Now()
	for p := data; len(p) > 0; {
		n := min(32<<10, len(p))
		_, _ = w.Write(p[:n])
		p = p[n:]
	}
	done()
	took := time.Since(start)
	cpu1, _ := cpuTime(0)
	mb := float64(len(data)) / 1e6
	return ScreenResult{Model: model, MB: round(mb), Sec: round(took.Seconds()), MBps: round(mb / took.Seconds()), CPUSec: round((cpu1 - cpu0).Seconds())}
}

// lineStream is n bytes of what the fake agent's flood looks like on the
// master side of its terminal (LF turned into CR LF).
func lineStream(n int, color bool) []byte {
	const filler = "the quick brown fox jumps over the lazy dog 0123456789"
	b := make([]byte, 0, n+128)
	for i := 0; len(b) < n; i++ {
		if color {
			b = fmt.Appendf(b, "\x1b[32m%08d\x1b[0m %s \x1b[1mok\x1b[0m\r\n", i, filler)
		} else {
			b = fmt.Appendf(b, "%08d %s ok\r\n", i, filler)
		}
	}
	return b[:n]
}

// recordedTUI is every raw PTY stream recorded from the newest CLI version
// under agent/screen/testdata, back to back.
func recordedTUI(moduleRoot string) ([]byte, error) {
	dirs, err := filepath.Glob(filepath.Join(moduleRoot, "agent", "screen", "testdata", "*"))
	if err != nil || len(dirs) == 0 {
		return nil, fmt.Errorf("no recordings under agent/screen/testdata")
	}
	sort.Strings(dirs)
	files, _ := filepath.Glob(filepath.Join(dirs[len(dirs)-1], "*.raw.gz"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no raw recordings in %s", dirs[len(dirs)-1])
	}
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, raw...)
	}
	return out, nil
}
