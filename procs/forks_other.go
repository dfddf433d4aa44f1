//go:build !darwin

package procs

import "time"

// forkWatch: only macOS tells of forks (kqueue EVFILT_PROC); elsewhere the
// recorder reads the table on its tick alone.
type forkWatch struct{}

func newForkWatch(<-chan struct{}) *forkWatch { return nil }

func (*forkWatch) watch([]int) {}

func (*forkWatch) wait(stop <-chan struct{}, d time.Duration) bool { return waitTick(stop, d) }

func (*forkWatch) close() {}
