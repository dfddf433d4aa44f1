package orchestrator

import (
	"fmt"
	"slices"
	"time"

	"github.com/familiar-dev/familiar/procs/proctable"
	"github.com/familiar-dev/familiar/protocol"
)

// The idle claudes (issue 40) — a finished task's kept warm for its
// follow-up, and those task/prepare started for a session's first prompt —
// are a cache: at most warmAgentMax of them, holding at most
// warmAgentMemoryMiB among them (their process trees' resident memory).
// Past either, the least recently used goes (a warm one's use is its turn's
// end, a prepared one's its asking), and familiar's log says which, why and
// what it held. The cache is checked when one joins it and when the
// settings change.

// idleAgent is one claude of the cache.
type idleAgent struct {
	id   string
	used time.Time
	pid  int // 0 while a prepared one starts
	a    *actor
	pa   *preparedAgent
	rss  uint64 // bytes
}

// goTrimWarm checks the cache in the background.
func (o *Orchestrator) goTrimWarm() {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.trimWarm()
	}()
}

// trimWarm lets the least recently used idle claudes go until the cache is
// within its bounds.
func (o *Orchestrator) trimWarm() {
	o.trimMu.Lock()
	defer o.trimMu.Unlock()
	s := o.settingsNow()
	most, budget := s.WarmAgentMax, uint64(s.WarmAgentMemoryMiB)<<20
	if most <= 0 {
		most = protocol.DefaultWarmAgentMax
	}
	if budget == 0 {
		budget = protocol.DefaultWarmAgentMemoryMiB << 20
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	_, warm := o.slotsLocked()
	pool := o.preparedLocked()
	o.mu.Unlock()
	var idle []idleAgent
	for _, a := range warm {
		v := a.view()
		if v.sess == nil {
			continue
		}
		idle = append(idle, idleAgent{id: a.id, used: v.finishedAt, pid: v.sess.PID(), a: a})
	}
	for _, pa := range pool {
		e := idleAgent{id: pa.id, used: pa.asked, pa: pa}
		select {
		case <-pa.ready:
			if pa.sess == nil {
				continue
			}
			e.pid = pa.sess.PID()
		default:
		}
		idle = append(idle, e)
	}
	slices.SortFunc(idle, func(a, b idleAgent) int { return a.used.Compare(b.used) })
	var total uint64
	for i := range idle {
		if idle[i].pid > 0 {
			idle[i].rss = o.resident(idle[i].pid)
		}
		total += idle[i].rss
	}
	now := o.clk.Now()
	for i := 0; i < len(idle) && (len(idle)-i > most || total > budget); i++ {
		e := idle[i]
		why := fmt.Sprintf("more than warmAgentMax (%d) idle claudes", most)
		if len(idle)-i <= most {
			why = fmt.Sprintf("idle claudes hold %d MiB, over warmAgentMemoryMiB (%d)", total>>20, budget>>20)
		}
		o.logger.Info("idle claude evicted", "task", e.id, "why", why, "rssMiB", e.rss>>20,
			"idle", now.Sub(e.used).Round(time.Second), "prepared", e.pa != nil)
		if e.pa != nil {
			o.releasePrepared(e.id, why)
		} else {
			e.a.post(envelope{in: cmdCool{}})
		}
		total -= e.rss
	}
}

// resident is the resident memory of process pid and its descendants, in
// bytes (Config.Resident in tests).
func (o *Orchestrator) resident(pid int) uint64 {
	if o.cfg.Resident != nil {
		return o.cfg.Resident(pid)
	}
	procs, err := proctable.All()
	if err != nil {
		return proctable.Resident(pid)
	}
	kids := map[int][]int{}
	for _, p := range procs {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
	}
	var sum uint64
	var walk func(int, int)
	walk = func(p, depth int) {
		sum += proctable.Resident(p)
		if depth < 64 {
			for _, k := range kids[p] {
				walk(k, depth+1)
			}
		}
	}
	walk(pid, 0)
	return sum
}
