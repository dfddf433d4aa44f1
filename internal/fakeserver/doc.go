// Package fakeserver is a test helper: the base of fake protocol.Servers
// (a stand-in familiar behind jsonrpc, the daemon's service wrapper, a
// running familiar that familiar's commands ask).
package fakeserver
