package procs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// RecordFile is the name of the process record in a task's directory.
const RecordFile = "agent.proc.json"

// Record is what a task's directory says about the agent process it runs:
// enough to find and stop that process tree after a crash without the
// store, which may be damaged, full or restored from an older backup.
type Record struct {
	Identity
	Started time.Time `json:"started"` // wall clock, for people reading it
}

// WriteRecord writes rec to dir/RecordFile atomically (a temporary file
// renamed over it, synced), so a crash leaves the old record or the new one.
func WriteRecord(dir string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("procs: encode process record: %w", err)
	}
	f, err := os.CreateTemp(dir, RecordFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("procs: write process record: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("procs: write process record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, RecordFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("procs: write process record: %w", err)
	}
	return nil
}

// ReadRecord reads dir/RecordFile; the error matches os.ErrNotExist when
// there is none.
func ReadRecord(dir string) (Record, error) {
	var rec Record
	b, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		return rec, fmt.Errorf("procs: read process record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("procs: read process record %s: %w", filepath.Join(dir, RecordFile), err)
	}
	return rec, nil
}

// RemoveRecord removes dir/RecordFile once its process has been reaped.
func RemoveRecord(dir string) error {
	err := os.Remove(filepath.Join(dir, RecordFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("procs: remove process record: %w", err)
	}
	return nil
}
