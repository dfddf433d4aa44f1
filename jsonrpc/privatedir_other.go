//go:build !unix

package jsonrpc

import (
	"fmt"
	"os"
)

// privateDir makes dir if it is missing; ownership is not checked here.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return nil
}
