package orchestrator

import (
	"os"
	"time"
)

// retentionEvery is how often old output logs are removed while familiar
// runs (also once at start).
const retentionEvery = 24 * time.Hour

// pruneOutputs removes raw output logs older than outputRetentionDays.
// Logs of live tasks are never removed, however old.
func (o *Orchestrator) pruneOutputs() (removed int) {
	o.mu.Lock()
	days := o.settingsNow().OutputRetentionDays
	var files []string
	if days > 0 {
		for _, a := range o.tasks {
			v := a.view()
			if v.T.Status.Live() || v.sess != nil {
				continue
			}
			files = append(files, v.logs...)
		}
	}
	now := o.clk.Now()
	o.mu.Unlock()
	cutoff := now.Add(-time.Duration(days) * 24 * time.Hour)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(f); err != nil {
			o.logger.Warn("remove old output", "file", f, "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		o.logger.Info("removed old output logs", "count", removed, "olderThanDays", days)
	}
	return removed
}

// retentionLoop prunes at start and every retentionEvery on the injected
// clock.
func (o *Orchestrator) retentionLoop() {
	defer o.wg.Done()
	for {
		o.pruneOutputs()
		t := o.clk.NewTimer(retentionEvery)
		select {
		case <-o.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}
