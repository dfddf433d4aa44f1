package profiles

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxFileSize bounds a profile or skill file: they end up on claude's command
// line, where one argument may not exceed 128 KiB on Linux.
const maxFileSize = 64 << 10

// document is a Markdown file with optional YAML frontmatter:
//
//	---
//	name: fix
//	taskTypes: [fix]
//	---
//	body…
//
// Keys keep their nodes so that every later complaint names a line.
type document struct {
	path     string
	keys     map[string]field // by key
	body     string
	bodyLine int // file line where body starts (1-based)
}

type field struct {
	keyLine int        // file line of the key
	value   *yaml.Node // lines relative to the frontmatter
}

// fmFirstLine is the file line of the first YAML line: the one after "---".
const fmFirstLine = 2

var yamlLine = regexp.MustCompile(`^line (\d+): `)

// parseDocument splits data into frontmatter and body. A file that does not
// start with a "---" line has no frontmatter: all of it is the body.
func parseDocument(path string, data []byte) (doc *document, err error) {
	// A user's file must never take the server down, whatever the YAML
	// library does with it.
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, &FileError{Path: path, Line: 1, Message: fmt.Sprintf("frontmatter cannot be parsed: %v", r)}
		}
	}()
	if len(data) > maxFileSize {
		return nil, &FileError{Path: path, Message: fmt.Sprintf("file is %d bytes, over the %d KiB limit", len(data), maxFileSize>>10)}
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	doc = &document{path: path, keys: map[string]field{}}
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		doc.body, doc.bodyLine = text, 1
		return doc, nil
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, doc.errAt(1, "frontmatter starts with --- but no --- line closes it")
	}
	doc.body = strings.Join(lines[end+1:], "\n")
	doc.bodyLine = end + 2
	fm := strings.Join(lines[1:end], "\n")
	if strings.TrimSpace(fm) == "" {
		return doc, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(fm), &root); err != nil {
		return nil, doc.yamlError(err, end)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return doc, nil
	}
	m := resolve(root.Content[0])
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, doc.errAt(fmFirstLine, "frontmatter must be a mapping of keys (name: …)")
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		line := fmFirstLine + k.Line - 1
		if k.Kind != yaml.ScalarNode {
			return nil, doc.errAt(line, "frontmatter keys must be plain words")
		}
		if _, dup := doc.keys[k.Value]; dup {
			return nil, doc.errAt(line, fmt.Sprintf("key %q appears twice", k.Value))
		}
		doc.keys[k.Value] = field{keyLine: line, value: v}
	}
	return doc, nil
}

// yamlParserProblems are the problems the YAML library's parser (as
// opposed to its scanner) reports. It numbers their lines from 0 and those
// of scanner errors from 1, and leaves the number out when it is 0.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

// yamlError turns a YAML error into a FileError at the file line it names.
// lastLine is the file line of the last YAML line: an error found at the end
// of the frontmatter is reported there rather than on the closing fence.
func (d *document) yamlError(err error, lastLine int) *FileError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := fmFirstLine
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			if slices.Contains(yamlParserProblems, msg) {
				n++
			}
			line = min(max(fmFirstLine+n-1, fmFirstLine), lastLine)
		}
	}
	return d.errAt(line, "frontmatter: "+msg)
}

func (d *document) errAt(line int, msg string) *FileError {
	return &FileError{Path: d.path, Line: line, Message: msg}
}

// resolve follows aliases (a bounded number of times: aliases may loop).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == 8 {
			return nil
		}
		n = n.Alias
	}
	return n
}

func (d *document) valueLine(f field) int {
	if f.value != nil && f.value.Line > 0 {
		return fmFirstLine + f.value.Line - 1
	}
	return f.keyLine
}

// unknownKeys reports the first key not in known, for files whose format is
// familiar's own (a typo such as "taskType" should not pass silently).
func (d *document) unknownKeys(known ...string) error {
	var bad []string
	for k := range d.keys {
		if !slices.Contains(known, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	// Report the one nearest the top so the message is stable.
	first := bad[0]
	for _, k := range bad[1:] {
		if d.keys[k].keyLine < d.keys[first].keyLine {
			first = k
		}
	}
	return d.errAt(d.keys[first].keyLine, fmt.Sprintf("unknown key %q (known: %s)", first, strings.Join(known, ", ")))
}

// str returns a scalar value ("" when absent or null).
func (d *document) str(key string) (string, int, error) {
	f, ok := d.keys[key]
	if !ok {
		return "", 0, nil
	}
	line := d.valueLine(f)
	n := resolve(f.value)
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", line, d.errAt(line, fmt.Sprintf("%s must be a single value", key))
	}
	if n.Tag == "!!null" {
		return "", line, nil
	}
	return strings.TrimSpace(n.Value), line, nil
}

// list returns a sequence of scalars; a single scalar is split on commas
// ("Read, Grep, Bash(go test:*)"), as Claude's own skill files write it.
func (d *document) list(key string) ([]string, int, error) {
	f, ok := d.keys[key]
	if !ok {
		return nil, 0, nil
	}
	line := d.valueLine(f)
	n := resolve(f.value)
	if n == nil {
		return nil, line, d.errAt(line, fmt.Sprintf("%s must be a list", key))
	}
	var out []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, line, nil
		}
		for _, s := range strings.Split(n.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			item := resolve(item)
			if item == nil || item.Kind != yaml.ScalarNode {
				l := line
				if item != nil {
					l = fmFirstLine + item.Line - 1
				}
				return nil, l, d.errAt(l, fmt.Sprintf("%s must be a list of words", key))
			}
			if s := strings.TrimSpace(item.Value); s != "" {
				out = append(out, s)
			}
		}
	default:
		return nil, line, d.errAt(line, fmt.Sprintf("%s must be a list", key))
	}
	return out, line, nil
}
