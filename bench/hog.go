package bench

import (
	"fmt"
	"os/exec"
)

// hog is CPU load of the bench's own: busy loops in child processes, so
// that a start can be measured at a chosen load (issue 40: at load 0, 3
// and 6) rather than at whatever else the machine runs. They are shells
// (sh is on every machine familiar runs on) at the bench's own priority,
// in processes of their own so that the bench's timing goroutines and the
// scripted API in its process are not the ones starved.
type hog struct {
	cmds []*exec.Cmd
	done []chan struct{}
}

// startHog starts n busy loops; stop ends them.
func startHog(n int) (*hog, error) {
	h := &hog{}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, fmt.Errorf("busy loop: %w", err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		h.cmds, h.done = append(h.cmds, cmd), append(h.done, done)
	}
	return h, nil
}

func (h *hog) stop() {
	for _, c := range h.cmds {
		_ = c.Process.Kill()
	}
	for _, d := range h.done {
		<-d
	}
	h.cmds, h.done = nil, nil
}
