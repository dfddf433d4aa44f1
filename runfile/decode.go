package runfile

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// decoder fills Go values from a yaml.Node tree (from YAML, or built from
// JSON by parseJSON), strictly: unknown and duplicate keys and ill-typed
// values are errors at their line. Struct fields are matched by their json
// tags, so the file's keys are the protocol's JSON names by construction.
//
// yaml.v3's own Decode cannot be used: it matches fields by yaml tags,
// reports unknown fields as "line N: field x not found in type T" with no
// column or path, and converts silently where a person most likely typed the
// wrong thing.
type decoder struct {
	// json is set when the tree came from JSON: a string field then takes
	// only a JSON string, as encoding/json would, where YAML takes any scalar
	// as its text (baseRef: 1.10 is the string "1.10").
	json bool
	// pos maps every field path the file has ("tasks[0].hints.files[1]") to
	// the node to point at: a mapping key for keyed fields, the element for
	// list items.
	pos map[string]*yaml.Node
	// visits and maxVisits bound the work on a file whose aliases expand a
	// small text into a huge value ("billion laughs").
	visits, maxVisits int
}

func newDecoder(isJSON bool, size int) *decoder {
	return &decoder{
		json: isJSON,
		pos:  make(map[string]*yaml.Node),
		// Without aliases every value costs at least a byte of the file.
		maxVisits: 2*size + 1024,
	}
}

// decode fills *out (a pointer) from n; field is n's path ("" for the root).
func (d *decoder) decode(n *yaml.Node, out any, field string) *Error {
	return d.value(n, reflect.ValueOf(out).Elem(), field)
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, field string) *Error {
	if d.visits++; d.visits > d.maxVisits {
		return nodeError(n, field, "the file expands to too many values (through YAML aliases?)")
	}
	if n.Kind == yaml.AliasNode {
		// An anchor is defined before its aliases, so this never loops.
		n = n.Alias
	}
	// null is an absent value: the zero value, or what was there (defaults).
	if isNull(n) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.value(n, p.Elem(), field); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || (d.json && n.ShortTag() != "!!str") {
			return d.typeError(n, v.Type(), field)
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			return d.typeError(n, v.Type(), field)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return d.typeError(n, v.Type(), field)
		}
		if n.Decode(&i) != nil || v.OverflowInt(i) {
			return nodeError(n, field, fmt.Sprintf("%s is out of range: %s", relative(field), n.Value))
		}
		v.SetInt(i)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.typeError(n, v.Type(), field)
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			f := index(field, i)
			d.pos[f] = c
			if err := d.value(c, s.Index(i), f); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		return d.mapping(n, v, field)
	case reflect.Struct:
		return d.object(n, v, field)
	default:
		// Only reached if protocol gains a field of a new kind; then this
		// decoder needs a case for it.
		return nodeError(n, field, fmt.Sprintf("familiar cannot read a %s from a tasks file", v.Type()))
	}
	return nil
}

// keys walks the key/value pairs of mapping n, rejecting non-string,
// duplicate and merge keys, and calls f with each key's name and nodes.
func (d *decoder) keys(n *yaml.Node, field string, f func(name string, key, val *yaml.Node) *Error) *Error {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		k := key
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			return nodeError(key, field, fmt.Sprintf("keys must be names, not %s", d.describe(k)))
		case k.ShortTag() == "!!merge":
			return nodeError(key, field, "YAML merge keys (<<) are not supported; write the keys out")
		}
		if first, dup := seen[k.Value]; dup {
			return nodeError(key, join(field, k.Value), fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first.Line))
		}
		seen[k.Value] = key
		if err := f(k.Value, key, val); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, field string) *Error {
	t := v.Type()
	if n.Kind != yaml.MappingNode || t.Key().Kind() != reflect.String {
		return d.typeError(n, t, field)
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	err := d.keys(n, field, func(name string, key, val *yaml.Node) *Error {
		f := join(field, name)
		d.pos[f] = key
		elem := reflect.New(t.Elem()).Elem()
		if err := d.value(val, elem, f); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(name).Convert(t.Key()), elem)
		return nil
	})
	if err != nil {
		return err
	}
	v.Set(m)
	return nil
}

func (d *decoder) object(n *yaml.Node, v reflect.Value, field string) *Error {
	if n.Kind != yaml.MappingNode {
		return d.typeError(n, v.Type(), field)
	}
	fields := jsonFields(v.Type())
	return d.keys(n, field, func(name string, key, val *yaml.Node) *Error {
		f := join(field, name)
		i := slices.IndexFunc(fields, func(sf jsonField) bool { return sf.name == name })
		if i < 0 {
			return nodeError(key, f, unknownKey(name, fields))
		}
		d.pos[f] = key
		return d.value(val, v.FieldByIndex(fields[i].index), f)
	})
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name  string
	index []int
}

// jsonFields lists the fields of struct type t under their JSON names,
// including those of embedded structs, in declaration order.
func jsonFields(t reflect.Type) []jsonField {
	var fields []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.HasPrefix(tag, "-,") {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for _, inner := range jsonFields(sf.Type) {
				fields = append(fields, jsonField{inner.name, append([]int{i}, inner.index...)})
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, jsonField{name, []int{i}})
	}
	return fields
}

// unknownKey says that name is not one of fields, with the key it most
// likely meant, else the keys there are.
func unknownKey(name string, fields []jsonField) string {
	msg := fmt.Sprintf("unknown key %q", name)
	if hint, ok := keyHints[name]; ok && slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == hint }) {
		return fmt.Sprintf("%s; did you mean %q?", msg, hint)
	}
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, f := range fields {
		if a, b := fold(name), fold(f.name); a == b || editDistance(a, b) <= 2 {
			return fmt.Sprintf("%s; did you mean %q?", msg, f.name)
		}
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return fmt.Sprintf("%s; the keys here are %s", msg, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes; keys
// are ASCII. Names longer than a key could be are not worth comparing.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) typeError(n *yaml.Node, want reflect.Type, field string) *Error {
	return nodeError(n, field, fmt.Sprintf("%s must be %s, not %s", relative(field), d.kindName(want), d.describe(n)))
}

// kindName names what a value of type t looks like in the file.
func (d *decoder) kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return d.kindName(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		if d.json {
			return "an array"
		}
		return "a list"
	default:
		if d.json {
			return "an object"
		}
		return "a mapping"
	}
}

// describe names the value at n for an error message: scalars as written
// (shortened), collections by kind.
func (d *decoder) describe(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		if d.json {
			return "an object"
		}
		return "a mapping"
	case yaml.SequenceNode:
		if d.json {
			return "an array"
		}
		return "a list"
	case yaml.ScalarNode:
		s := n.Value
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "…"
		}
		if n.ShortTag() == "!!str" {
			return strconv.Quote(s)
		}
		return s
	default:
		return "nothing"
	}
}

// lookup returns the node of field, or of the nearest enclosing field the
// file has: a missing "tasks[2].title" is reported at "tasks[2]".
func (d *decoder) lookup(field string) *yaml.Node {
	for {
		if n, ok := d.pos[field]; ok {
			return n
		}
		cut := max(strings.LastIndexByte(field, '.'), strings.LastIndexByte(field, '['))
		if cut <= 0 {
			return nil
		}
		field = field[:cut]
	}
}

// nodeError makes an *Error at n (which may be nil: no position).
func nodeError(n *yaml.Node, field, msg string) *Error {
	e := &Error{Field: field, Msg: msg}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// relative is field without its top-level part, as protocol's messages name
// fields: "tasks[2].hints.files[0]" → "hints.files[0]".
func relative(field string) string {
	if _, rest, ok := strings.Cut(field, "."); ok {
		return rest
	}
	return field
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
