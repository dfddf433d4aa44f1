package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// AllTasks returns every task, in id order, and the ids of records that
// could not be read (skipped, not fatal). familiar keeps every task in
// memory and lists them there, so this is read once, at start.
func (s *Store) AllTasks() (tasks []TaskRecord, unreadable []string, err error) {
	var out []TaskRecord
	err = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
			var tv taskValue
			if err := json.Unmarshal(v, &tv); err != nil {
				unreadable = append(unreadable, string(k))
				return nil
			}
			out = append(out, tv.record(string(k)))
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: all tasks: %w", err)
	}
	return out, unreadable, nil
}
