package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutSetting stores value (JSON) under name, replacing any previous value.
// If ctx ends first, see Cancellation in the package doc.
func (s *Store) PutSetting(ctx context.Context, name string, value json.RawMessage) error {
	if err := validID("setting name", name); err != nil {
		return fmt.Errorf("store: put setting: %w", err)
	}
	if len(value) == 0 {
		return fmt.Errorf("store: put setting %q: %w: empty value", name, ErrInvalid)
	}
	if err := validJSON("setting value", value); err != nil {
		return fmt.Errorf("store: put setting %q: %w", name, err)
	}
	// Copied because the caller may reuse value as soon as we return, which
	// on ctx cancellation is before the writer has stored it.
	v := bytes.Clone(value)
	err := s.submit(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSettings).Put([]byte(name), v)
	})
	if err != nil {
		return fmt.Errorf("store: put setting %q: %w", name, err)
	}
	return nil
}

// GetSetting returns the value stored under name, or an error matching
// ErrNotFound.
func (s *Store) GetSetting(name string) (json.RawMessage, error) {
	var v json.RawMessage
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings).Get([]byte(name))
		if b == nil {
			return ErrNotFound
		}
		// b belongs to the read transaction's mmap; it is invalid after it.
		v = bytes.Clone(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: get setting %q: %w", name, err)
	}
	return v, nil
}
