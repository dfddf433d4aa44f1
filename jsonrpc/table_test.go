package jsonrpc

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/fakeserver"
	"github.com/familiar-dev/familiar/protocol"
)

// goMethod is the protocol.Server method a JSON-RPC method name calls:
// "task/markDone" → TaskMarkDone.
func goMethod(rpcMethod string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(rpcMethod, "/") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// validParams passes every method's Validate (unknown fields are ignored),
// so a call through the table reaches the method.
var validParams = json.RawMessage(`{"workspaceRoot":"/repo","settings":{},"id":"t1","title":"t","description":"d",
	"questionId":"q1","optionId":"allow","data":"x","cols":80,"rows":24,"mode":"executor","name":"s",
	"servers":{},"priority":1,"ref":"clip/abc","rule":"Bash(ls)","scope":"user","text":"hi","ids":["t1"],
	"step":"a","steps":[{"id":"a","title":"A","description":"d"}]}`)

// Every method of protocol.Server has an entry in the method table that
// calls it, and every entry calls the method its name says: a method added
// to the interface without an entry (or an entry left over) fails here, not
// in an editor as -32601.
func TestTableDispatchesEveryMethod(t *testing.T) {
	iface := reflect.TypeFor[protocol.Server]()
	dispatched := map[string]string{}
	for rpcMethod, call := range methods {
		name := goMethod(rpcMethod)
		if _, ok := iface.MethodByName(name); !ok {
			t.Errorf("the table's %q names no method of protocol.Server (no %s)", rpcMethod, name)
			continue
		}
		params := validParams
		if rpcMethod == protocol.MethodTaskRespond {
			// exactly one of optionId and text
			params = json.RawMessage(`{"id":"t1","questionId":"q1","optionId":"allow"}`)
		}
		_, err := call(context.Background(), fakeserver.Unimplemented{}, params)
		if want := fakeserver.NotImplemented(name).Message; err == nil || err.Error() != want {
			t.Errorf("the table's %q answered %v, want a call of %s (%q)", rpcMethod, err, name, want)
		}
		dispatched[name] = rpcMethod
	}
	for i := range iface.NumMethod() {
		if name := iface.Method(i).Name; dispatched[name] == "" {
			t.Errorf("protocol.Server.%s has no entry in the method table: clients would get -32601", name)
		}
	}
}
