package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// OutputLagResult is how long a task's terminal output takes from the
// agent's write to the client's task/output notification, through the
// whole path (PTY, the masker off the reader's goroutine, the notifier).
type OutputLagResult struct {
	// Variant: "nothing held" (every frame ends in a cursor move, nothing
	// of it could start a secret) or "partial secret held" (each frame
	// ends with the first characters of an API key, which the masker
	// holds back until the next frame completes or ends them, or its
	// quiet deadline passes).
	Variant string `json:"variant"`
	// Lag: the frame's write (its " t=<ns>" stamp) → the notification
	// carrying the stamp. A held tail must not hold back the text before it.
	Lag Dist `json:"lag"`
	// HeldLag (partial secret only): the frame's write → the notification
	// carrying its held tail, the first after the stamp's.
	HeldLag Dist `json:"heldLag"`
	FPS     int  `json:"framesPerSec"`
}

// Variants of the output lag scenario.
const (
	LagNothingHeld = "nothing held"
	LagHeld        = "partial secret held"
)

// lagTail is what the held variant's frames end with: the start of an
// Anthropic key, which only the next bytes can tell from a harmless word.
const lagTail = "sk-ant-api03-"

// outputLag runs two fake agents side by side in one workspace, one whose
// frames end in nothing that could start a secret and one whose frames end
// in the start of a key, and times each frame's way to the client over the
// window. Side by side, the machine's load weighs on both alike.
func (r *runner) outputLag(ctx context.Context) error {
	const fps = 10 // frames 100 ms apart: longer than the masker's quiet hold
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return err
	}
	base := fakeEnv(r.fake, map[string]string{"FAKEAGENT_MODE": "idle", "FAKEAGENT_STAMP": "1", "FAKEAGENT_FPS": strconv.Itoa(fps)})
	w, err := openWorkspace(ctx, r.tmp, repo, r.fake, func(o *agent.Options) {
		base(o)
		if strings.Contains(o.Prompt, LagHeld) {
			o.ExtraEnv["FAKEAGENT_TAIL"] = lagTail
		}
	}, nil)
	if err != nil {
		return err
	}
	defer w.close()
	if err := w.settings(ctx, protocol.SettingsUpdate{MaxConcurrent: intp(2)}); err != nil {
		return err
	}
	watch, stop := newStatusWatch(w.notes)
	defer stop()

	type series struct {
		variant   string
		lag, held []time.Duration
		lastStamp time.Time // of the latest stamp seen, until its tail is
	}
	var (
		mu        sync.Mutex
		measuring bool
		byTask    = map[string]*series{}
	)
	stopLag := w.notes.handle(func(x note) {
		if x.method != protocol.NotifyTaskOutput {
			return
		}
		var p protocol.TaskOutputNotification
		if json.Unmarshal(x.params, &p) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		s := byTask[p.ID]
		if !measuring || s == nil {
			return
		}
		stamps := stampsIn([]byte(p.Data))
		if s.variant == LagHeld && !s.lastStamp.IsZero() {
			// The first notification after a stamp's carries the tail the
			// masker held (alone, or before the next frame's stamp).
			s.held = append(s.held, x.at.Sub(s.lastStamp))
			s.lastStamp = time.Time{}
		}
		for _, ns := range stamps {
			s.lag = append(s.lag, x.at.Sub(time.Unix(0, ns)))
			s.lastStamp = time.Unix(0, ns)
		}
	})
	defer stopLag()

	for _, v := range []string{LagNothingHeld, LagHeld} {
		t, err := w.create(ctx, "output lag, "+v)
		if err != nil {
			return err
		}
		mu.Lock()
		byTask[t.ID] = &series{variant: v}
		mu.Unlock()
	}
	if err := watch.wait(ctx, 2*time.Minute, "both tasks to run", func(at map[string]map[protocol.Status]time.Time) bool {
		return countIn(at, protocol.StatusRunning) == 2
	}); err != nil {
		return err
	}
	// The first frame (the whole screen) and the start-up's writes are
	// not what is measured; a second of frames is past them.
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	measuring = true
	mu.Unlock()
	select {
	case <-time.After(r.opts.Window):
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	measuring = false
	var out []OutputLagResult
	for _, v := range []string{LagNothingHeld, LagHeld} {
		for _, s := range byTask {
			if s.variant == v {
				out = append(out, OutputLagResult{Variant: v, Lag: distOf(s.lag), HeldLag: distOf(s.held), FPS: fps})
			}
		}
	}
	mu.Unlock()
	for _, o := range out {
		if o.Lag.N == 0 {
			return fmt.Errorf("output lag, %s: no stamped frame reached the client in %s", o.Variant, r.opts.Window)
		}
		if o.Variant == LagHeld && o.HeldLag.N == 0 {
			return fmt.Errorf("output lag, %s: no held tail reached the client in %s", o.Variant, r.opts.Window)
		}
		r.logf("output lag, %s: p50 %.1f / p99 %.1f ms (%d frames); held tail p50 %.1f / p99 %.1f ms", o.Variant, o.Lag.P50, o.Lag.P99, o.Lag.N, o.HeldLag.P50, o.HeldLag.P99)
	}
	r.report.OutputLag = out
	return nil
}

// stampsIn returns the " t=<unix ns>" stamps of the fake agent's frames in
// p. The masker may hold a chunk's last word back until the next chunk, so a
// stamp can start a notification's data.
func stampsIn(p []byte) []int64 {
	var out []int64
	for {
		i := bytes.Index(p, []byte("t="))
		if i < 0 {
			return out
		}
		if i > 0 && p[i-1] != ' ' && p[i-1] != '"' {
			p = p[i+2:]
			continue
		}
		p = p[i+2:]
		j := 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		if ns, err := strconv.ParseInt(string(p[:j]), 10, 64); err == nil && j > 0 {
			out = append(out, ns)
		}
	}
}
