//go:build !linux

package store

import "os"

// datasync makes f's data durable as bbolt does here: File.Sync, which on
// macOS is F_FULLFSYNC (through the drive's cache), so the journal's one
// flush and bbolt's two are the same kind.
func datasync(f *os.File) error { return f.Sync() }
