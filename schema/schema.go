// Package schema makes the JSON Schemas of the files people write for
// familiar from the Go types that read them, so that an editor checks and
// completes a tasks file, .familiar/config.yaml, a profile's frontmatter or
// a permission policy with the same keys familiar accepts: one source. Each
// property's description is its field's Go doc comment; a named string
// type's values are its constants. The schemas are written into the VS Code
// extension (editors/vscode/schemas) by this package's test, which fails
// when one is stale.
package schema

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Source is what Go's source says of the types: field comments and the
// constants of named string types, keyed by "pkgpath.Type" (and
// "pkgpath.Type.Field").
type Source struct {
	Docs   map[string]string
	Consts map[string][]string
}

// ReadSource parses the Go files of the packages in dirs (by import path).
func ReadSource(dirs map[string]string) (*Source, error) {
	src := &Source{Docs: map[string]string{}, Consts: map[string][]string{}}
	fset := token.NewFileSet()
	for pkgPath, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
			src.read(pkgPath, f)
		}
	}
	return src, nil
}

func (s *Source) read(pkgPath string, f *ast.File) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch sp := spec.(type) {
			case *ast.TypeSpec:
				st, ok := sp.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := fld.Doc.Text()
					if text == "" {
						text = fld.Comment.Text()
					}
					for _, n := range fld.Names {
						s.Docs[pkgPath+"."+sp.Name.Name+"."+n.Name] = clean(text, n.Name)
					}
				}
			case *ast.ValueSpec:
				if gd.Tok != token.CONST || sp.Type == nil {
					continue
				}
				typ, ok := sp.Type.(*ast.Ident)
				if !ok {
					continue
				}
				for _, v := range sp.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if val, err := strconv.Unquote(lit.Value); err == nil {
							key := pkgPath + "." + typ.Name
							s.Consts[key] = append(s.Consts[key], val)
						}
					}
				}
			}
		}
	}
}

// clean makes a Go doc comment a description: one paragraph, without the
// field's own name opening it ("Model is passed…" → "Passed…").
func clean(text, name string) string {
	text = strings.Join(strings.Fields(text), " ")
	for _, verb := range []string{" is ", " are ", " "} {
		if rest, ok := strings.CutPrefix(text, name+verb); ok && verb != " " {
			return strings.ToUpper(rest[:1]) + rest[1:]
		}
	}
	return text
}

// Options shape one schema beyond what the types say.
type Options struct {
	// Required lists, by struct type, the JSON names of its required keys.
	Required map[reflect.Type][]string
	// Enums gives the values of a field whose type does not name them
	// (a []string of task types), keyed "Type.Field" by the struct's name.
	Enums map[string][]string
	// Open lists the struct types that take keys of their own beyond the
	// fields (none of familiar's files does: unknown keys are errors).
	Open map[reflect.Type]bool
	// Omit leaves fields out, keyed "Type.Field": a field of the protocol's
	// type that the file does not take.
	Omit map[string]bool
}

// Generator turns Go types into JSON Schema (draft-07, which VS Code and
// the Red Hat YAML extension read).
type Generator struct {
	Source  *Source
	Options Options
	// Missing collects the fields that have no description, "Type.Field".
	Missing []string
}

// Document is the schema of a whole file: root's schema with an id, a title
// and a description.
func (g *Generator) Document(id, title, description string, root reflect.Type) map[string]any {
	s := g.Of(root)
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["$id"] = id
	s["title"] = title
	s["description"] = description
	return s
}

// Of is the schema of values of type t.
func (g *Generator) Of(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return g.Of(t.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		s := map[string]any{"type": "string"}
		if vals := g.Source.Consts[t.PkgPath()+"."+t.Name()]; t.PkgPath() != "" && len(vals) > 0 {
			s["enum"] = vals
		}
		return s
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.Of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.Of(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("schema: no JSON Schema for %s", t))
}

func (g *Generator) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	g.fields(t, props)
	s := map[string]any{"type": "object", "properties": props}
	if !g.Options.Open[t] {
		s["additionalProperties"] = false
	}
	if req := g.Options.Required[t]; len(req) > 0 {
		s["required"] = req
	}
	return s
}

func (g *Generator) fields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() || g.Options.Omit[t.Name()+"."+f.Name] {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			g.fields(f.Type, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := g.Of(f.Type)
		if vals, ok := g.Options.Enums[t.Name()+"."+f.Name]; ok {
			if p["type"] == "array" {
				p["items"] = map[string]any{"type": "string", "enum": vals}
			} else {
				p["enum"] = vals
			}
		}
		if d := g.Source.Docs[t.PkgPath()+"."+t.Name()+"."+f.Name]; d != "" {
			p["description"] = d
		} else if m := t.Name() + "." + f.Name; !slices.Contains(g.Missing, m) {
			g.Missing = append(g.Missing, m)
		}
		props[name] = p
	}
}
