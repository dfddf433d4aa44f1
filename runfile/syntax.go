package runfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file turns the bytes of a tasks file into a yaml.Node tree with the
// line and column of every node, from YAML or from JSON, and reports syntax
// errors with their position.

func isJSONPath(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

func isYAMLPath(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

// parseTree returns the root node of the file (nil if the file holds no
// document) and whether it was read as JSON.
//
// JSON is parsed by encoding/json rather than as YAML (of which it is nearly
// a subset) because yaml.v3 rejects some valid JSON ("\/", surrogate-pair
// escapes) and reports syntax errors without a column.
func parseTree(data []byte, jsonPath, yamlPath bool) (root *yaml.Node, isJSON bool, _ *Error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // editors on Windows write one
	if err := checkText(data); err != nil {
		return nil, false, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	looksJSON := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	if (jsonPath || looksJSON) && json.Valid(data) {
		return parseJSON(data), true, nil
	}
	if jsonPath {
		e := jsonSyntaxError(data)
		if root, err := parseYAML(data); !looksJSON && err == nil && root != nil && root.Kind != yaml.ScalarNode {
			e.Msg += " (the file is YAML: name it .yaml)"
		}
		return nil, true, e
	}
	root, err := parseYAML(data)
	if err == nil {
		return root, false, nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return nil, false, e
	}
	if looksJSON && !yamlPath {
		// Most likely JSON with a mistake in it: JSON's message is the
		// one that makes sense, and it has a column.
		return nil, true, jsonSyntaxError(data)
	}
	return nil, false, yamlSyntaxError(data, err)
}

// printable is the set of characters YAML allows in a file (YAML 1.2,
// 5.1); checking it here gives the position yaml.v3's reader does not.
func printable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= utf8.MaxRune)
}

// checkText requires UTF-8 text without control characters.
func checkText(data []byte) *Error {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		var msg string
		switch {
		case r == utf8.RuneError && size == 1:
			msg = fmt.Sprintf("the file is not UTF-8 text: byte 0x%02x", data[off])
		case !printable(r):
			msg = fmt.Sprintf("the character %U is not allowed in a tasks file", r)
		default:
			off += size
			continue
		}
		e := &Error{Msg: msg}
		e.Line, e.Column = newCursor(data).seek(off)
		return e
	}
	return nil
}

// parseYAML parses the one YAML document of data; nil if there is none.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, err
	default:
		return nil, nodeError(&next, "", "the file holds a second YAML document here; put all the tasks in one")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// yamlProblem matches yaml.v3's syntax errors, "yaml: line 4: did not find
// expected key", where the line is present only for some errors and then
// is, for parser errors, the 0-based line where the enclosing mapping or
// list began, not the line with the mistake.
var yamlProblem = regexp.MustCompile(`^yaml: (?:line \d+: )?(.*)$`)

// yamlHints explain the terse messages of the mistakes people make most.
var yamlHints = map[string]string{
	"mapping values are not allowed in this context": ` (a value that contains ": " must be quoted)`,
	"did not find expected key":                      " (check the indentation, and quote values that contain quotes)",
	"did not find expected '-' indicator":            " (check the indentation of the list)",
	"found character that cannot start any token":    " (quote values that start with @ or `)",
}

// yamlSyntaxError finds the line of err, a syntax error in data. yaml.v3
// does not report where a mistake is (see yamlProblem), but it parses as a
// stream: the first line whose prefix of the file already fails with the
// same problem is where the mistake is, or where the construct it breaks
// (an unclosed quote or bracket) begins.
func yamlSyntaxError(data []byte, err error) *Error {
	problem := func(err error) string {
		if m := yamlProblem.FindStringSubmatch(err.Error()); m != nil {
			return m[1]
		}
		return err.Error()
	}
	want := problem(err)
	var ends []int // ends[i] is the end of line i+1, its newline included
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] < len(data) {
		ends = append(ends, len(data))
	}
	// Binary search: failing is monotone in the prefix for the mistakes
	// that matter, and a wrong guess still names a line near the mistake.
	lo, hi := 0, len(ends)-1 // the prefix of line hi+1 fails
	for lo < hi {
		mid := (lo + hi) / 2
		if _, err := parseYAML(data[:ends[mid]]); err != nil && problem(err) == want {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return &Error{Line: hi + 1, Msg: "invalid YAML: " + want + yamlHints[want]}
}

func jsonSyntaxError(data []byte) *Error {
	var v any
	err := json.Unmarshal(data, &v)
	se, ok := errors.AsType[*json.SyntaxError](err)
	if !ok { // not reached: data is not valid JSON
		return &Error{Line: 1, Msg: fmt.Sprintf("invalid JSON: %v", err)}
	}
	// Offset counts the offending byte; at the end of the input, point just
	// after the last thing written.
	off := int(se.Offset) - 1
	if off < 0 || off >= len(data) || strings.HasPrefix(se.Error(), "unexpected end") {
		off = len(bytes.TrimRight(data, " \t\r\n"))
	}
	e := &Error{Msg: "invalid JSON: " + se.Error()}
	e.Line, e.Column = newCursor(data).seek(off)
	return e
}

// parseJSON builds the yaml.Node tree of valid JSON, with each node's line
// and column, so that one decoder and one way of locating errors serve both
// formats. Scalars get the tags yaml.v3 would give them.
func parseJSON(data []byte) *yaml.Node {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	cur := newCursor(data)
	var value func() *yaml.Node
	value = func() *yaml.Node {
		// InputOffset is the end of the previous token; only white space
		// and separators lie between it and the next one.
		start := int(dec.InputOffset())
		for start < len(data) && strings.IndexByte(" \t\r\n,:", data[start]) >= 0 {
			start++
		}
		tok, err := dec.Token()
		if err != nil {
			panic(fmt.Sprintf("runfile: reading valid JSON: %v", err)) // checked by json.Valid
		}
		n := &yaml.Node{Kind: yaml.ScalarNode}
		n.Line, n.Column = cur.seek(start)
		switch t := tok.(type) {
		case json.Delim:
			n.Kind, n.Tag, n.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
			if t == '[' {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			}
			for dec.More() {
				if n.Kind == yaml.MappingNode {
					n.Content = append(n.Content, value()) // the key
				}
				n.Content = append(n.Content, value())
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				panic(fmt.Sprintf("runfile: reading valid JSON: %v", err))
			}
		case string:
			n.Tag, n.Value, n.Style = "!!str", t, yaml.DoubleQuotedStyle
		case json.Number:
			n.Tag, n.Value = "!!int", t.String()
			if strings.ContainsAny(n.Value, ".eE") {
				n.Tag = "!!float"
			}
		case bool:
			n.Tag, n.Value = "!!bool", fmt.Sprint(t)
		case nil:
			n.Tag, n.Value = "!!null", "null"
		}
		return n
	}
	return value()
}

// cursor turns byte offsets into the line and column an editor shows;
// columns count characters, as yaml.v3's do. Offsets must not decrease
// between calls, which makes a file of many tokens linear to walk.
type cursor struct {
	data      []byte
	off       int
	line, col int
}

func newCursor(data []byte) *cursor { return &cursor{data: data, line: 1, col: 1} }

func (c *cursor) seek(off int) (line, col int) {
	for c.off < off && c.off < len(c.data) {
		if c.data[c.off] == '\n' {
			c.line, c.col = c.line+1, 1
			c.off++
			continue
		}
		_, size := utf8.DecodeRune(c.data[c.off:])
		c.col++
		c.off += size
	}
	return c.line, c.col
}
