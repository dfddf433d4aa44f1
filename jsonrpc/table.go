package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/familiar-dev/familiar/protocol"
)

// methodFunc decodes and validates params, then calls the protocol.Server.
// The table of them, methods, is generated from protocol.Server
// (table_gen.go, by protocol/gogen).
type methodFunc func(ctx context.Context, impl protocol.Server, params json.RawMessage) (any, error)

// params is what every params struct of package protocol is.
type params[P any] interface {
	*P
	Validate() error
}

// typed adapts a protocol.Server method (as a method expression) to the table.
func typed[P any, PP params[P], R any](call func(protocol.Server, context.Context, PP) (R, error)) methodFunc {
	return func(ctx context.Context, impl protocol.Server, raw json.RawMessage) (any, error) {
		p := PP(new(P))
		if err := decodeParams(raw, p); err != nil {
			return nil, err
		}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		r, err := call(impl, ctx, p)
		if err != nil {
			return nil, err
		}
		return emptyIfNil(r), nil
	}
}

// noParams adapts a method that takes no params and whose result is null
// in PROTOCOL.md (shutdown).
func noParams(call func(protocol.Server, context.Context) error) methodFunc {
	return func(ctx context.Context, impl protocol.Server, _ json.RawMessage) (any, error) {
		return nil, call(impl, ctx)
	}
}

// noResult adapts a method whose result is {} in PROTOCOL.md.
func noResult[P any, PP params[P]](call func(protocol.Server, context.Context, PP) error) methodFunc {
	return typed(func(impl protocol.Server, ctx context.Context, p PP) (struct{}, error) {
		return struct{}{}, call(impl, ctx, p)
	})
}

// emptyIfNil turns a nil slice result into [], since PROTOCOL.md's list
// results are arrays and editor code does not expect null.
func emptyIfNil(r any) any {
	if v := reflect.ValueOf(r); v.Kind() == reflect.Slice && v.IsNil() {
		return reflect.MakeSlice(v.Type(), 0, 0).Interface()
	}
	return r
}

// decodeParams reads params (absent and null read as {}) into p. Unknown
// fields are ignored (PROTOCOL.md). An ill-typed field is -32602 with
// data.field set to its JSON path as encoding/json reports it (array
// elements are reported as the array: "acceptanceCriteria").
func decodeParams(raw json.RawMessage, p any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return protocol.InvalidParams("", "params must be an object with named fields.")
	}
	err := json.Unmarshal(raw, p)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		name := te.Field
		if name == "" {
			name = "params"
		}
		return protocol.InvalidParams(te.Field, fmt.Sprintf("%s must be %s (got %s).", name, describe(te.Type), te.Value))
	}
	return protocol.InvalidParams("", fmt.Sprintf("params could not be read: %v.", err))
}

// describe names a Go type the way the JSON it expects would be described.
func describe(t reflect.Type) string {
	if t == reflect.TypeFor[protocol.Time]() {
		return "an RFC 3339 time string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return describe(t.Elem())
	default:
		return "an object"
	}
}
