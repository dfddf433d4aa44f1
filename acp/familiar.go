package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
)

// Dialer connects to the familiar serving the repository at root (starting
// one if none runs) and returns the connection, LSP-framed familiar
// protocol. Closing it leaves that familiar and its agents running for
// the other editors.
type Dialer func(ctx context.Context, root string) (io.ReadWriteCloser, error)

// familiar is one connection to a repository's familiar.
type familiar struct {
	root string
	// The typed calls of familiar's protocol.
	*rpcclient.Client
	// claudeAuth is how its tasks log in, from initialize (nil: an older
	// familiar that does not say).
	claudeAuth *protocol.AuthStatus

	mu   sync.Mutex
	subs map[string][]func(method string, params json.RawMessage) // guarded by mu; by task id
	// unclaimed keeps the latest notifications of tasks nobody follows yet:
	// a new task's first ones arrive before task/create's answer.
	unclaimed []notification // guarded by mu
	// onGlobal gets familiar's warnings and errors about no one task (a
	// usage limit, a permission policy that asks nothing, the store):
	// every session on this familiar shows them.
	onGlobal func(protocol.ServerMessageNotification)
}

type notification struct {
	task, method string
	params       json.RawMessage
}

// maxUnclaimed bounds unclaimed.
const maxUnclaimed = 512

func dialFamiliar(ctx context.Context, dial Dialer, root, version string, onGlobal func(protocol.ServerMessageNotification)) (*familiar, *protocol.InitializeResult, error) {
	rwc, err := dial(ctx, root)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to familiar for %s: %w", root, err)
	}
	f := &familiar{root: root, subs: map[string][]func(string, json.RawMessage){}, onGlobal: onGlobal}
	f.Client = rpcclient.New(rwc, f.handle)
	init, err := f.Initialize(ctx, &protocol.InitializeParams{
		WorkspaceRoot: root, ClientInfo: &protocol.ClientInfo{Name: "familiar-acp", Version: version}})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("initialize familiar for %s: %w", root, err)
	}
	f.claudeAuth = init.Claude.Auth
	return f, init, nil
}

// handle receives familiar's notifications and hands task ones to the
// session that follows the task.
func (f *familiar) handle(method string, params json.RawMessage) {
	var head struct {
		ID   string `json:"id"`
		Task *struct {
			ID string `json:"id"`
		} `json:"task"`
		// plan/updated is followed by the plan's id.
		Plan *struct {
			ID string `json:"id"`
		} `json:"plan"`
	}
	_ = json.Unmarshal(params, &head)
	id := head.ID
	if head.Task != nil {
		id = head.Task.ID
	}
	if head.Plan != nil {
		id = head.Plan.ID
	}
	if method == protocol.NotifyServerMessage {
		var m protocol.ServerMessageNotification
		if json.Unmarshal(params, &m) != nil || m.Level == protocol.LevelInfo {
			return // info is for a log; an ACP client shows each message
		}
		if id = messageTask(m.Text); id == "" {
			if f.onGlobal != nil {
				f.onGlobal(m)
			}
			return
		}
	}
	if id == "" {
		return
	}
	f.mu.Lock()
	subs := append([]func(string, json.RawMessage){}, f.subs[id]...)
	if len(subs) == 0 {
		f.unclaimed = append(f.unclaimed, notification{id, method, params})
		if len(f.unclaimed) > maxUnclaimed {
			f.unclaimed = f.unclaimed[len(f.unclaimed)-maxUnclaimed:]
		}
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(method, params)
	}
}

// follow sends the notifications of task id to fn, those that came before
// anyone followed it first, until the returned function is called. It must
// not be called from fn.
func (f *familiar) follow(id string, fn func(method string, params json.RawMessage)) func() {
	f.mu.Lock()
	var early []notification
	kept := f.unclaimed[:0]
	for _, n := range f.unclaimed {
		if n.task == id {
			early = append(early, n)
		} else {
			kept = append(kept, n)
		}
	}
	f.unclaimed = kept
	// Delivered under mu so that nothing newer overtakes them.
	for _, n := range early {
		fn(n.method, n.params)
	}
	f.subs[id] = append(f.subs[id], fn)
	n := len(f.subs[id]) - 1
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if n < len(f.subs[id]) {
			f.subs[id][n] = func(string, json.RawMessage) {}
		}
	}
}

// messageTask is the task a server/message is about: familiar starts
// those with "task <id>: " (an MCP server that will not start, an agent's
// problem); "" for the others.
func messageTask(text string) string {
	rest, ok := strings.CutPrefix(text, "task ")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ": ")
	if !ok || id == "" || strings.ContainsAny(id, " \t\n") {
		return ""
	}
	return id
}
