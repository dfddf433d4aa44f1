//go:build !linux && !darwin

package proctable

import (
	"errors"
	"fmt"
	"os"
)

// local on a platform familiar does not run on yet: every process looks
// gone, so callers fall back to what they can tell without a process table
// (the store's lock names its holder by pid alone).
type local struct{}

var errUnsupported = fmt.Errorf("proctable: no process table on this platform: %w", errors.Join(errors.ErrUnsupported, os.ErrNotExist))

func (local) Stat(int) (Proc, error)      { return Proc{}, errUnsupported }
func (local) All() ([]Proc, error)        { return nil, errUnsupported }
func (local) EnvironHas(int, string) bool { return false }
func (local) BootID() (string, error)     { return "", errUnsupported }
func (local) Written(int) uint64          { return 0 }
func fastChildren() ([]int, bool)         { return nil, false }
