// Package store persists familiar's state in bbolt: tasks, per-task event logs
// with sequence numbers, the audit log and approvals, written by one goroutine
// that commits everything pending in one transaction.
//
// It is never imported by agent or procs.
package store
