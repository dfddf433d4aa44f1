// Package profiles owns agent profiles and modes: prompt templates per task
// type, tool allow/deny lists per mode, context injection (task, criteria,
// prior attempt, repository hints, other tasks) and skills with hot reload.
//
// It never spawns processes.
package profiles
