//go:build darwin

package procs

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// forkWatch wakes the lineage's recorder when a process of the tree forks
// (kqueue EVFILT_PROC NOTE_FORK): a Bash tool command's shell is seen while
// it runs, however short its life, and with it the session its background
// jobs stay in after it ends. Between forks the recorder still reads the
// table every recordEvery.
type forkWatch struct {
	kq      int
	watched map[int]bool
	budget  forkBudget    // reads of the table for forks
	stopped chan struct{} // closed by the goroutine that triggers the user event on stop
}

const stopIdent = 1 // the EVFILT_USER event that stop triggers

func newForkWatch(stop <-chan struct{}) *forkWatch {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil // the recorder reads the table on its tick alone
	}
	unix.CloseOnExec(kq)
	ev := unix.Kevent_t{Ident: stopIdent, Filter: unix.EVFILT_USER, Flags: unix.EV_ADD | unix.EV_CLEAR}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		return nil
	}
	w := &forkWatch{kq: kq, watched: map[int]bool{}, budget: newForkBudget(time.Now()), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		<-stop
		trigger := unix.Kevent_t{Ident: stopIdent, Filter: unix.EVFILT_USER, Fflags: unix.NOTE_TRIGGER}
		unix.Kevent(kq, []unix.Kevent_t{trigger}, nil, nil)
	}()
	return w
}

// watch asks for the forks of pids; a pid already watched, or gone, is
// left as it is (the kernel drops the watch of a process that exits).
func (w *forkWatch) watch(pids []int) {
	if w == nil {
		return
	}
	live := make(map[int]bool, len(pids))
	for _, pid := range pids {
		live[pid] = true
		if w.watched[pid] {
			continue
		}
		ev := unix.Kevent_t{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_CLEAR, Fflags: unix.NOTE_FORK}
		if _, err := unix.Kevent(w.kq, []unix.Kevent_t{ev}, nil, nil); err == nil {
			w.watched[pid] = true
		}
	}
	for pid := range w.watched {
		if !live[pid] {
			delete(w.watched, pid) // exited: its knote went with it
		}
	}
}

// wait returns after d, or when a watched process forks (within the
// forkBudget); false when stop was closed.
func (w *forkWatch) wait(stop <-chan struct{}, d time.Duration) bool {
	if w == nil {
		return waitTick(stop, d)
	}
	deadline := time.Now().Add(d)
	events := make([]unix.Kevent_t, 16)
	forked := false
	for {
		now := time.Now()
		timeout := deadline.Sub(now)
		if forked {
			wait := w.budget.take(now)
			if wait == 0 {
				return true
			}
			timeout = min(timeout, wait)
		}
		if timeout <= 0 {
			return true
		}
		ts := unix.NsecToTimespec(timeout.Nanoseconds())
		n, err := unix.Kevent(w.kq, nil, events, &ts)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return waitTick(stop, time.Until(deadline)) // the kqueue failed: the tick alone
		}
		for _, ev := range events[:max(n, 0)] {
			switch ev.Filter {
			case unix.EVFILT_USER:
				return false
			case unix.EVFILT_PROC:
				forked = true
			}
		}
		select {
		case <-stop:
			return false
		default:
		}
	}
}

// close releases the kqueue once the stop trigger is done with it.
func (w *forkWatch) close() {
	if w == nil {
		return
	}
	<-w.stopped
	unix.Close(w.kq)
}
