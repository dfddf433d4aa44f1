// Package repoconfig reads a repository's .familiar/config.yaml: what a
// team keeps with its code for familiar (the merge queue's verify command,
// the commands an auditor may run). Settings win over it. The file is
// written by hand and read unattended, so it is strict: an unknown key
// (mergeVerfy) is an error naming the key, the file and its line, never
// silently ignored. The orchestrator, familiar doctor and familiar run
// --check read it through Load, so they say the same words.
package repoconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is .familiar/config.yaml. Its JSON Schema is generated from this
// type (package schema): a field added here is documented there.
type Config struct {
	// The command the merge queue runs in each task's candidate before its
	// merge (exit 0 passes), e.g. "make test"; the setting mergeVerify
	// wins over it. Empty: no check.
	MergeVerify string `yaml:"mergeVerify" json:"mergeVerify,omitempty"`
	// The test and lint commands an auditor task may run; the setting
	// testCommands wins over them. Absent: familiar's defaults.
	TestCommands []string `yaml:"testCommands" json:"testCommands,omitempty"`
}

// RelPath is where the file is, relative to the repository's root.
var RelPath = filepath.Join(".familiar", "config.yaml")

// Path is the file of the repository at root.
func Path(root string) string { return filepath.Join(root, RelPath) }

// Keys are the file's keys, in declaration order.
func Keys() []string {
	t := reflect.TypeFor[Config]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("yaml")
	}
	return keys
}

// Error is what is wrong with the file: "path:line: message".
type Error struct {
	Path string
	Line int // 0: unknown
	Msg  string
	err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

func (e *Error) Unwrap() error { return e.err }

// Load reads the config of the repository at root. No file is the zero
// Config and no error; an unreadable or broken file is an *Error.
func Load(root string) (Config, error) {
	path := Path(root)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, &Error{Path: path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err)), err: err}
	}
	return Parse(path, b)
}

// Parse parses the file's content; path names it in errors.
func Parse(path string, data []byte) (cfg Config, err error) {
	defer func() {
		// A user's file must never take familiar down, whatever the
		// YAML library does with it.
		if r := recover(); r != nil {
			cfg, err = Config{}, &Error{Path: path, Msg: fmt.Sprintf("cannot be parsed: %v", r)}
		}
	}()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, &Error{Path: path, Msg: fmt.Sprintf("is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: ")), err: err}
	}
	if len(root.Content) == 0 {
		return Config{}, nil // empty, or only comments
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		if doc.ShortTag() == "!!null" {
			return Config{}, nil
		}
		return Config{}, &Error{Path: path, Line: doc.Line, Msg: "the file must be a mapping of keys (" + strings.Join(Keys(), ", ") + ")"}
	}
	known := Keys()
	seen := map[string]int{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k := doc.Content[i]
		if !slices.Contains(known, k.Value) {
			return Config{}, &Error{Path: path, Line: k.Line, Msg: fmt.Sprintf("unknown key %q (known: %s)", k.Value, strings.Join(known, ", "))}
		}
		if first, dup := seen[k.Value]; dup {
			return Config{}, &Error{Path: path, Line: k.Line, Msg: fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first)}
		}
		seen[k.Value] = k.Line
	}
	if err := doc.Decode(&cfg); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  ")
		return Config{}, &Error{Path: path, Msg: "has a value of the wrong type: " + msg, err: err}
	}
	return cfg, nil
}

func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}
