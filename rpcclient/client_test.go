package rpcclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// wireName is PROTOCOL.md's name of a protocol.Server method: its first
// word lower-cased, then a slash and the rest in lower camel case
// (TaskMarkDone is task/markDone); one word is the name (Initialize).
func wireName(goName string) string {
	i := strings.IndexFunc(goName[1:], unicode.IsUpper) + 1
	if i == 0 {
		return strings.ToLower(goName)
	}
	rest := []rune(goName[i:])
	rest[0] = unicode.ToLower(rest[0])
	return strings.ToLower(goName[:i]) + "/" + string(rest)
}

// fakeFamiliar serves one connection: it records each request's method and
// params, answers task/get's unknown id with -32001 and its data, anything
// else with null, and sends a notification before answering initialize.
func fakeFamiliar(t *testing.T, nc net.Conn, got chan<- *jsonrpc2.Request) {
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(nc, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			got <- req
			switch req.Method {
			case protocol.MethodInitialize:
				if err := c.Notify(ctx, protocol.NotifyTaskUpdated, map[string]any{"task": map[string]string{"id": "t1"}}); err != nil {
					t.Errorf("notify: %v", err)
				}
			case protocol.MethodTaskGet:
				pe := protocol.NotFound("task", "nope")
				data, _ := json.Marshal(pe.Data)
				return nil, &jsonrpc2.Error{Code: int64(pe.Code), Message: pe.Message, Data: (*json.RawMessage)(&data)}
			}
			return nil, nil
		}))
	t.Cleanup(func() { conn.Close(); <-conn.DisconnectNotify() })
}

func newPair(t *testing.T, onNotify func(string, json.RawMessage)) (*Client, chan *jsonrpc2.Request) {
	a, b := net.Pipe()
	got := make(chan *jsonrpc2.Request, 1)
	fakeFamiliar(t, b, got)
	c := New(a, onNotify)
	t.Cleanup(func() { c.Close() })
	return c, got
}

// TestEveryMethodSendsItsName calls each method of protocol.Server on a
// Client and checks the request names that method as PROTOCOL.md does, with
// the params given. A typed call that is missing does not compile (Client
// is a protocol.Server); one that sends another method's name fails here.
func TestEveryMethodSendsItsName(t *testing.T) {
	c, got := newPair(t, nil)
	iface := reflect.TypeFor[protocol.Server]()
	cv := reflect.ValueOf(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		args := []reflect.Value{reflect.ValueOf(ctx)}
		var sent reflect.Value
		if m.Type.NumIn() == 2 {
			sent = reflect.New(m.Type.In(1).Elem())
			// A field set, so the params on the wire are these.
			if f := sent.Elem().FieldByName("ID"); f.IsValid() && f.Kind() == reflect.String {
				f.SetString("t-" + m.Name)
			}
			args = append(args, sent)
		}
		out := cv.MethodByName(m.Name).Call(args)
		if err, _ := out[len(out)-1].Interface().(error); err != nil && m.Name != "TaskGet" {
			t.Errorf("%s: %v", m.Name, err)
		}
		req := <-got
		if want := wireName(m.Name); req.Method != want {
			t.Errorf("%s sent %q, want %q", m.Name, req.Method, want)
		}
		if sent.IsValid() {
			want, _ := json.Marshal(sent.Interface())
			var a, b any
			_ = json.Unmarshal(want, &a)
			if req.Params != nil {
				_ = json.Unmarshal(*req.Params, &b)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s sent params %v, want %s", m.Name, b, want)
			}
		}
	}
}

// TestAnswersAndNotifications: an error answer is the *protocol.Error the
// server made (code, message, data), a notification reaches onNotify, and a
// call on a closed connection is ErrClosed.
func TestAnswersAndNotifications(t *testing.T) {
	notes := make(chan string, 4)
	c, got := newPair(t, func(method string, params json.RawMessage) { notes <- method + " " + string(params) })
	go func() {
		for range got {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, &protocol.InitializeParams{WorkspaceRoot: "/r"}); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; n != `task/updated {"task":{"id":"t1"}}` {
		t.Errorf("notification %q", n)
	}
	_, err := c.TaskGet(ctx, &protocol.TaskGetParams{ID: "nope"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeNotFound || pe.Message != `No task with id "nope" exists.` {
		t.Fatalf("TaskGet: %#v", err)
	}
	if !IsCode(err, protocol.CodeNotFound) || IsCode(err, protocol.CodeConflict) {
		t.Errorf("IsCode of %v", err)
	}
	if data, _ := pe.Data.(json.RawMessage); string(data) != `{"kind":"task","id":"nope"}` {
		t.Errorf("data %s", data)
	}
	c.Close()
	if _, err := c.TaskList(ctx, &protocol.TaskListParams{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	close(got)
}
