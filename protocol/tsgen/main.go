// Command tsgen writes editors/vscode/src/protocol.ts, the TypeScript types of
// familiar's protocol, from the Go types of package protocol: every params and
// result type of protocol.Server's methods, every notification, and the
// objects they reach, with the enumerations as string unions and the error
// codes as constants. The extension mirrored these by hand and drifted from
// them (Task.undoableUntil was missing); TestGenerated fails when the checked-in
// file differs from what this writes, as gopls keeps its generated protocol.
//
// Run it with `go generate ./protocol/...` (or `go run ./protocol/tsgen`).
//
// Field and type comments come from the Go source (go/parser), so the
// TypeScript says what the Go says. A field is optional in TypeScript when
// its JSON tag has omitempty or omitzero, or it is a pointer.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

//go:generate go run . -o ../../editors/vscode/src/protocol.ts

func main() {
	out := flag.String("o", "", "the file to write (default: standard output)")
	flag.Parse()
	src, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}

// enums are the string types with a fixed set of values: their lists in
// package protocol are the truth, so a value added there reaches the union.
var enums = []struct {
	t      reflect.Type
	values any // a []T of the type's values
}{
	{reflect.TypeFor[protocol.Status](), protocol.Statuses},
	{reflect.TypeFor[protocol.Activity](), protocol.Activities},
	{reflect.TypeFor[protocol.TaskType](), protocol.TaskTypes},
	{reflect.TypeFor[protocol.Mode](), protocol.Modes},
	{reflect.TypeFor[protocol.Driver](), protocol.Drivers},
	{reflect.TypeFor[protocol.QuestionKind](), protocol.QuestionKinds},
	{reflect.TypeFor[protocol.BlockedReason](), protocol.BlockedReasons},
	{reflect.TypeFor[protocol.DecidedBy](), protocol.DecidedBys},
	{reflect.TypeFor[protocol.FileStatus](), protocol.FileStatuses},
	{reflect.TypeFor[protocol.MergeStrategy](), protocol.MergeStrategies},
	{reflect.TypeFor[protocol.PolicyDefault](), protocol.PolicyDefaults},
	{reflect.TypeFor[protocol.McpServerType](), protocol.McpServerTypes},
	{reflect.TypeFor[protocol.MessageLevel](), protocol.MessageLevels},
	{reflect.TypeFor[protocol.Source](), protocol.Sources},
	{reflect.TypeFor[protocol.GrantScope](), protocol.GrantScopes},
	{reflect.TypeFor[protocol.PlanState](), protocol.PlanStates},
	{reflect.TypeFor[protocol.PlanStepState](), protocol.PlanStepStates},
}

// notifications are the params of every server → client notification, by
// method name (a Notification cannot be enumerated by reflection).
var notifications = []protocol.Notification{
	protocol.TaskUpdatedNotification{},
	protocol.TaskOutputNotification{},
	protocol.TaskQuestionNotification{},
	protocol.TaskQuestionResolvedNotification{},
	protocol.TaskCompletedNotification{},
	protocol.TaskTranscriptNotification{},
	protocol.TaskHookNotification{},
	protocol.SkillsChangedNotification{},
	protocol.ServerMessageNotification{},
	protocol.QueueUpdatedNotification{},
	protocol.PlanUpdatedNotification{},
}

// extra are types no method or notification reaches but clients use.
var extra = []reflect.Type{
	reflect.TypeFor[protocol.Event](),
}

// codes are the JSON-RPC error codes, by the name the extension uses.
var codes = []struct {
	name string
	code int
}{
	{"ParseError", protocol.CodeParseError},
	{"InvalidRequest", protocol.CodeInvalidRequest},
	{"MethodNotFound", protocol.CodeMethodNotFound},
	{"InvalidParams", protocol.CodeInvalidParams},
	{"InternalError", protocol.CodeInternalError},
	{"ServerNotInitialized", protocol.CodeServerNotInitialized},
	{"RequestCancelled", protocol.CodeRequestCancelled},
	{"NotFound", protocol.CodeNotFound},
	{"FailedPrecondition", protocol.CodeFailedPrecondition},
	{"Conflict", protocol.CodeConflict},
	{"Unavailable", protocol.CodeUnavailable},
}

// Option ids a permission question offers (PROTOCOL.md, "rule").
var optionIDs = []struct{ name, id string }{
	{"Allow", protocol.OptionAllow},
	{"AllowAlways", protocol.OptionAllowAlways},
	{"AllowAlwaysExact", "allow_always_exact"},
	{"Deny", protocol.OptionDeny},
	{"ModeAcceptEdits", "mode_accept_edits"},
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	ptimeType   = reflect.TypeFor[protocol.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	ctxType     = reflect.TypeFor[interface{ Deadline() (time.Time, bool) }]()
	errorType   = reflect.TypeFor[error]()
	protocolPkg = reflect.TypeFor[protocol.Task]().PkgPath()
)

type gen struct {
	docs    docs
	order   []reflect.Type // structs in the order first reached
	seen    map[reflect.Type]bool
	methods []methodSig
}

type methodSig struct{ name, params, result string }

// Generate returns protocol.ts.
func Generate() ([]byte, error) {
	d, err := readDocs()
	if err != nil {
		return nil, err
	}
	g := &gen{docs: d, seen: map[reflect.Type]bool{}}
	srv := reflect.TypeFor[protocol.Server]()
	for i := range srv.NumMethod() {
		m := srv.Method(i)
		sig := methodSig{name: m.Name, params: "void", result: "null"}
		for j := range m.Type.NumIn() {
			if in := m.Type.In(j); !in.Implements(ctxType) {
				sig.params = g.ts(in)
			}
		}
		for j := range m.Type.NumOut() {
			if out := m.Type.Out(j); out != errorType {
				sig.result = g.ts(out)
			}
		}
		g.methods = append(g.methods, sig)
	}
	for _, n := range notifications {
		g.ts(reflect.TypeOf(n))
	}
	for _, t := range extra {
		g.ts(t)
	}

	var b bytes.Buffer
	b.WriteString(`// Code generated by go run ./protocol/tsgen; DO NOT EDIT.
// The types of familiar's JSON-RPC protocol (docs/PROTOCOL.md and familiar's
// additions), from the Go types of package protocol. To change them, change
// protocol and run: go generate ./protocol/...
//
// Times are RFC 3339 strings; optional fields are those the server may leave
// out (omitempty), so code reading them handles their absence.

`)
	for _, e := range enums {
		g.comment(&b, "", g.docs.types[e.t.Name()])
		v := reflect.ValueOf(e.values)
		var vals []string
		for i := range v.Len() {
			vals = append(vals, fmt.Sprintf("'%s'", v.Index(i).String()))
		}
		fmt.Fprintf(&b, "export type %s = %s;\n\n", e.t.Name(), strings.Join(vals, " | "))
	}
	for _, t := range g.order {
		g.comment(&b, "", g.docs.types[t.Name()])
		fmt.Fprintf(&b, "export interface %s {\n", t.Name())
		g.fields(&b, t, "  ")
		b.WriteString("}\n\n")
	}
	b.WriteString("/** The params and result of every method, by its wire name (protocol.Server's Method<GoName>). */\n")
	b.WriteString("export interface Methods {\n")
	for _, m := range g.methods {
		wire, ok := g.docs.wire[m.name]
		if !ok {
			return nil, fmt.Errorf("method %s has no Method%s constant naming it on the wire", m.name, m.name)
		}
		fmt.Fprintf(&b, "  '%s': { params: %s; result: %s };\n", wire, m.params, m.result)
	}
	b.WriteString("}\n\n")
	b.WriteString("/** The params of every notification, by method. */\n")
	b.WriteString("export interface Notifications {\n")
	for _, n := range notifications {
		fmt.Fprintf(&b, "  '%s': %s;\n", n.Method(), reflect.TypeOf(n).Name())
	}
	b.WriteString("}\n\n")
	b.WriteString("/** JSON-RPC error codes (protocol/errors.go). */\nexport const Code = {\n")
	for _, c := range codes {
		fmt.Fprintf(&b, "  %s: %d,\n", c.name, c.code)
	}
	b.WriteString("} as const;\n\n")
	b.WriteString("/** The option ids a permission question offers. */\nexport const OptionId = {\n")
	for _, o := range optionIDs {
		fmt.Fprintf(&b, "  %s: '%s',\n", o.name, o.id)
	}
	b.WriteString("} as const;\n\n")
	// The sets of statuses, from protocol.Status's predicates, so the
	// extension asks the questions the server does with the same answers.
	b.WriteString("/** What each Status means (protocol.Status's predicates, protocol/status.go). */\n")
	b.WriteString("export const StatusTraits: Record<Status, { live: boolean; finished: boolean; resumable: boolean; undoable: boolean; holdsWorktree: boolean; words: string }> = {\n")
	for _, s := range protocol.Statuses {
		fmt.Fprintf(&b, "  %s: { live: %t, finished: %t, resumable: %t, undoable: %t, holdsWorktree: %t, words: %q },\n",
			s, s.Live(), s.Finished(), s.Resumable(), s.Undoable(), s.HoldsWorktree(), s.Words())
	}
	b.WriteString("};\n")
	// One function per predicate, named as its Go method, so the
	// extension's questions read as the server's (statusLive(t.status) for
	// t.Status.Live()). A status a newer familiar added is none of them, as
	// in Go, rather than a TypeError on an undefined row.
	for _, p := range []struct{ fn, trait, doc string }{
		{"statusLive", "live", "the task's agent is starting or at work (starting, running, waiting)"},
		{"statusFinished", "finished", "the task's work is over, well or not (merging, merged, blocked, cancelled)"},
		{"statusResumable", "resumable", "task/resume continues the task in its worktree and session (paused, blocked)"},
		{"statusUndoable", "undoable", "task/undo takes the task within the undo window (merging, merged, blocked, cancelled)"},
		{"statusHoldsWorktree", "holdsWorktree", "work that will run in the task's worktree is queued or under way (queued, starting, running, waiting); cancelling stops it"},
	} {
		fmt.Fprintf(&b, "\n/** %s: %s. */\nexport function %s(s: string): boolean {\n  return StatusTraits[s as Status]?.%s ?? false;\n}\n", p.trait, p.doc, p.fn, p.trait)
	}
	return b.Bytes(), nil
}

// fields writes t's JSON fields, embedded structs' flattened as encoding/json does.
func (g *gen) fields(b *bytes.Buffer, t reflect.Type, indent string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && !special(f.Type) {
			g.fields(b, f.Type, indent)
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := f.Type.Kind() == reflect.Pointer ||
			slices.Contains(strings.Split(opts, ","), "omitempty") ||
			slices.Contains(strings.Split(opts, ","), "omitzero")
		g.comment(b, indent, g.docs.fields[t.Name()+"."+f.Name])
		q := ""
		if optional {
			q = "?"
		}
		fmt.Fprintf(b, "%s%s%s: %s;\n", indent, name, q, g.ts(f.Type))
	}
}

func special(t reflect.Type) bool { return t == timeType || t == ptimeType }

// ts is the TypeScript type of t, queuing named structs for emission.
func (g *gen) ts(t reflect.Type) string {
	switch {
	case special(t):
		return "string"
	case t == rawType:
		return "any"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.ts(t.Elem())
	case reflect.String:
		for _, e := range enums {
			if e.t == t {
				return t.Name()
			}
		}
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		el := g.ts(t.Elem())
		if strings.ContainsAny(el, " |") {
			el = "(" + el + ")"
		}
		return el + "[]"
	case reflect.Map:
		k := g.ts(t.Key())
		if k != "string" {
			// An enum key: not every value need be present.
			return fmt.Sprintf("Partial<Record<%s, %s>>", k, g.ts(t.Elem()))
		}
		return fmt.Sprintf("Record<string, %s>", g.ts(t.Elem()))
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		if t.Name() == "" || t.PkgPath() != protocolPkg {
			var b bytes.Buffer
			b.WriteString("{ ")
			g.fields(&b, t, "")
			return strings.ReplaceAll(strings.TrimSpace(b.String()), "\n", " ") + " }"
		}
		if !g.seen[t] {
			g.seen[t] = true
			g.order = append(g.order, t)
			// Reach the fields' types now, so the order is the order of reaching.
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() {
					g.ts(f.Type)
				}
			}
		}
		return t.Name()
	}
	return "unknown"
}

func (g *gen) comment(b *bytes.Buffer, indent, doc string) {
	doc = strings.TrimSpace(doc)
	if doc == "" {
		return
	}
	lines := strings.Split(doc, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, strings.ReplaceAll(lines[0], "*/", "* /"))
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		fmt.Fprintf(b, "%s * %s\n", indent, strings.TrimRight(strings.ReplaceAll(l, "*/", "* /"), " "))
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

// docs are the comments of package protocol's types ("Task") and fields
// ("Task.Title"), from its source.
// wire maps a method's Go name to its wire name, the value of its
// Method<GoName> constant.
type docs struct{ types, fields, wire map[string]string }

func readDocs() (docs, error) {
	d := docs{types: map[string]string{}, fields: map[string]string{}, wire: map[string]string{}}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return d, fmt.Errorf("finding tsgen's source to read protocol's")
	}
	dir := filepath.Join(filepath.Dir(self), "..")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return d, fmt.Errorf("listing protocol's source: %w", err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return d, fmt.Errorf("reading protocol's comments: %w", err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if ok && gd.Tok == token.CONST {
				readWireNames(gd, d.wire)
			}
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if doc != nil {
					d.types[ts.Name.Name] = doc.Text()
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					text := ""
					if fl.Doc != nil {
						text = fl.Doc.Text()
					} else if fl.Comment != nil {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						d.fields[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return d, nil
}

// readWireNames records the string constants Method<GoName> of a const
// declaration: the wire name of each method.
func readWireNames(gd *ast.GenDecl, wire map[string]string) {
	for _, spec := range gd.Specs {
		vs, ok := spec.(*ast.ValueSpec)
		if !ok {
			continue
		}
		for i, n := range vs.Names {
			if !strings.HasPrefix(n.Name, "Method") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					wire[strings.TrimPrefix(n.Name, "Method")] = v
				}
			}
		}
	}
}
