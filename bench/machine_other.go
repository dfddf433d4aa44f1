//go:build !darwin

package bench

import "time"

// Where /proc has none of these, there is nothing else to ask.
func sysLoadAvg() ([3]float64, bool)   { return [3]float64{}, false }
func sysMemBytes() uint64              { return 0 }
func sysKernel() string                { return "" }
func sysCPU(int) (time.Duration, bool) { return 0, false }
func sysMemory(int) (memory, bool)     { return memory{}, false }
