//go:build !linux && !darwin

package workspace

import "path/filepath"

// kernelPath resolves symbolic links only, on a platform familiar does not
// run on yet.
func kernelPath(dir string) (string, error) { return filepath.EvalSymlinks(dir) }

func fixSpelling(p string) string { return p }
