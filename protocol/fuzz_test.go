package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// validator is what every params struct is.
type validator interface{ Validate() error }

// paramTypes returns the params type of every Server method (found by
// reflection, so a new method is fuzzed without touching this file), plus
// the nested types with their own Validate.
func paramTypes(t testing.TB) map[string]reflect.Type {
	t.Helper()
	types := map[string]reflect.Type{}
	srv := reflect.TypeFor[Server]()
	for i := range srv.NumMethod() {
		m := srv.Method(i)
		if m.Type.NumIn() < 2 {
			continue // Shutdown: no params
		}
		p := m.Type.In(1)
		if p.Kind() != reflect.Pointer || !p.Implements(reflect.TypeFor[validator]()) {
			t.Fatalf("%s takes %v, which has no Validate", m.Name, p)
		}
		types[m.Name] = p.Elem()
	}
	for _, v := range []any{Settings{}, SettingsUpdate{}, Policy{}, McpServer{}} {
		types[reflect.TypeOf(v).Name()] = reflect.TypeOf(v)
	}
	return types
}

// FuzzParams decodes arbitrary JSON into every method's params and calls
// Validate, as package jsonrpc does (Validate also runs on what a failed
// decode left behind, which must not panic either). A failure must be an
// *Error with code -32602 whose data.field names a field of the params, so
// the client can point at it; a success must survive encoding and decoding.
func FuzzParams(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"id":""}`, `{"id":"t1","offset":-1,"limit":99999999}`,
		`{"title":"t","description":"d","acceptanceCriteria":[" "],"hints":{"files":["a\u0000b"]}}`,
		`{"title":"t","description":"d","baseRef":"--upload-pack=touch x","mcpServers":{"":{"type":"http","url":"://"}}}`,
		`{"title":"t","description":"d","permissionPolicy":{"default":"allow","allow":["Bash(("]}}`,
		`{"workspaceRoot":"/r","settings":{"maxConcurrent":0,"mcpServers":{"x":{"type":"sse"}}}}`,
		`{"settings":{"permissionPolicy":{"default":"nope"},"defaultDriver":"x","termGraceSec":-1}}`,
		`{"status":["running","nope"],"since":"2026-01-02T00:00:00Z","until":"2020-01-01T00:00:00Z"}`,
		`{"since":12}`, `{"id":"t","questionId":"q","updatedInput":[1]}`, `{"id":"t","questionId":"q","updatedInput":" null "}`,
		`{"id":"a","before":"a"}`, `{"id":"a","priority":null}`, `{"id":"a","cols":0,"rows":10001}`,
		`{"servers":{"a b":{"type":"stdio"}}}`, `{"sinceSeq":-5}`, `{"name":"  "}`, `{"type":"stdio","command":"x"}`,
		`{"maxConcurrent":1,"defaultDriver":"pty","approvalTimeoutSec":1,"noProgressTimeoutSec":1,"outputRetentionDays":1,"permissionPolicy":{"default":"ask"}}`,
	} {
		f.Add([]byte(s))
	}
	types := paramTypes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, typ := range types {
			p := reflect.New(typ)
			decodeErr := json.Unmarshal(data, p.Interface())
			err := validate(p)
			if again := validate(p); !reflect.DeepEqual(err, again) {
				t.Fatalf("%s: Validate is not deterministic: %v, then %v", name, err, again)
			}
			if err != nil {
				checkInvalidParams(t, name, typ, err)
				continue
			}
			if decodeErr != nil {
				continue
			}
			// What passed must still pass after a round trip: a client that
			// echoes params back (a retry) must not be refused.
			b, merr := json.Marshal(p.Interface())
			if merr != nil {
				t.Fatalf("%s: encoding valid params: %v", name, merr)
			}
			q := reflect.New(typ)
			if uerr := json.Unmarshal(b, q.Interface()); uerr != nil {
				t.Fatalf("%s: decoding %s: %v", name, b, uerr)
			}
			if err := validate(q); err != nil {
				t.Fatalf("%s: %s was valid as %s, invalid after a round trip: %v", name, b, data, err)
			}
		}
	})
}

// validate calls Validate on the value behind p, whichever receiver it has.
func validate(p reflect.Value) error {
	if v, ok := p.Interface().(validator); ok {
		return v.Validate()
	}
	return p.Elem().Interface().(validator).Validate()
}

func checkInvalidParams(t *testing.T, name string, typ reflect.Type, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || pe != err {
		t.Fatalf("%s: Validate returned %T %v, want a *protocol.Error", name, err, err)
	}
	data, ok := pe.Data.(*ErrorData)
	if pe.Code != CodeInvalidParams || !ok || data.Field == "" || pe.Message == "" {
		t.Fatalf("%s: Validate returned code %d %q data %#v, want -32602 with a field", name, pe.Code, pe.Message, pe.Data)
	}
	// Nested types validated on their own report paths relative to
	// themselves, so only the params of methods are held to their fields.
	if strings.HasSuffix(typ.Name(), "Params") {
		top, _, _ := strings.Cut(data.Field, ".")
		top, _, _ = strings.Cut(top, "[")
		if !hasJSONField(typ, top) {
			t.Fatalf("%s: data.field %q does not name a field of %s", name, data.Field, typ)
		}
	}
}

func hasJSONField(typ reflect.Type, name string) bool {
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct && hasJSONField(f.Type, name) {
			return true // an embedded struct's fields are the outer one's in JSON
		}
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return true
		}
	}
	return false
}
