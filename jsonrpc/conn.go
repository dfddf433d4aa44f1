package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// Server serves PROTOCOL.md over any number of connections (stdio, unix
// socket clients), all calling one protocol.Server and all receiving the
// notifications published on one Hub.
type Server struct {
	impl protocol.Server
	// refusal, when set, answers every request instead of impl (NewRefusal).
	refusal error
	hub     *Hub
	log     *slog.Logger
	lastID  atomic.Uint64 // connection ids, for logs
}

// NewServer returns a Server calling impl. Notifications published on hub
// reach every connection that has completed initialize. log receives the
// transport's logs; nothing is ever written to stdout but frames.
func NewServer(impl protocol.Server, hub *Hub, log *slog.Logger) *Server {
	return &Server{impl: impl, hub: hub, log: log}
}

// NewRefusal returns a Server that answers every request with err (a
// *protocol.Error says its code): how a forwarder that can reach no familiar
// tells the editor why, as the answer to its initialize, instead of exiting
// with the reason only on its stderr, which editors do not show.
func NewRefusal(err error, log *slog.Logger) *Server {
	return &Server{refusal: err, hub: NewHub(log, 0), log: log}
}

// ServeConn serves one connection until the client closes it, sends exit,
// is dropped for not reading its notifications, or ctx is done. It returns
// only after every request handler of the connection has returned, and
// closes rwc. The error is nil for a clean end; otherwise it says what broke
// the framing.
//
// When the client closes its sending side, requests already read are
// answered before the connection closes (a client may write its requests and
// half-close); a handler that never returns holds the connection until ctx
// is done.
func (s *Server) ServeConn(ctx context.Context, rwc io.ReadWriteCloser) error {
	id := s.lastID.Add(1)
	log := s.log.With("conn", id)
	c := &connection{
		srv:     s,
		id:      id,
		log:     log,
		stream:  newFrameStream(rwc, log),
		pending: map[jsonrpc2.ID]context.CancelFunc{},
	}
	// Add is only ever called on the read goroutine, which is the one that
	// runs drain, so Wait here cannot race with Add.
	c.stream.drain = c.handlers.Wait
	c.slots = make(chan struct{}, maxInFlight)
	c.async = jsonrpc2.AsyncHandler(handlerFunc(c.serve))
	log.Debug("connection open")
	rpc := jsonrpc2.NewConn(ctx, c.stream, c, jsonrpc2.SetLogger(printfLogger{log}))
	<-rpc.DisconnectNotify()

	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	// jsonrpc2 cancelled the context the handlers' contexts derive from.
	c.handlers.Wait()
	c.mu.Lock()
	sub := c.subscriber
	c.subscriber = nil
	c.mu.Unlock()
	if sub != nil {
		sub.detach()
	}
	err := c.stream.err()
	log.Debug("connection closed", "err", err)
	return err
}

// maxInFlight bounds the requests of one connection that run at once. Past
// it, Handle waits for one to finish before reading on, so a client that
// floods requests (or never reads their responses) is slowed down by TCP-like
// backpressure instead of growing goroutines and buffered params without
// bound. No real client comes near it.
const maxInFlight = 128

type initState int

const (
	stateNew          initState = iota // initialize not called, or it failed
	stateInitializing                  // initialize is running
	stateReady
)

// connection is one client: its initialize/shutdown state, its pending
// requests (for $/cancelRequest) and its notification subscription.
type connection struct {
	srv    *Server
	id     uint64
	log    *slog.Logger
	stream *frameStream
	async  jsonrpc2.Handler

	// handlers counts running request handlers; ServeConn waits for them.
	handlers sync.WaitGroup
	// slots holds one token per running request (see maxInFlight).
	slots chan struct{}

	mu sync.Mutex
	// state, initDone, shutdown, closed, pending and subscriber are guarded by mu.
	state initState
	// initDone is closed when the running initialize returns; requests read
	// meanwhile wait for it, so a client may pipeline after initialize.
	initDone   chan struct{}
	shutdown   bool // shutdown was received: only exit is accepted now
	closed     bool // the connection is gone: no handler may start
	pending    map[jsonrpc2.ID]context.CancelFunc
	subscriber *subscriber
}

// call is what the read goroutine decided about a request before handing it
// to its own goroutine.
type call struct {
	cancel     context.CancelFunc
	registered bool          // in pending, so $/cancelRequest can reach it
	early      error         // answer with this without calling the method
	waitInit   chan struct{} // wait for initialize to finish first
	isInit     bool
}

type callKey struct{}

// Handle implements jsonrpc2.Handler. It runs on the read goroutine, so it
// does only bookkeeping that must happen in arrival order (registering the
// request for $/cancelRequest, the initialize gate, exit) and hands the
// request to jsonrpc2.AsyncHandler, so a slow method never stalls reading.
func (c *connection) Handle(ctx context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		c.notification(rpc, req)
		return
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return // nobody would read the response
	}
	ctx, cancel := context.WithCancel(ctx)
	cl := &call{cancel: cancel}
	if _, dup := c.pending[req.ID]; dup {
		// Not registered: a cancel for this id keeps reaching the first one.
		cl.early = protocol.InvalidRequest(fmt.Sprintf("Request id %s is already used by a pending request.", req.ID))
	} else {
		c.pending[req.ID] = cancel
		cl.registered = true
		cl.early, cl.waitInit, cl.isInit = c.admitLocked(req.Method)
	}
	c.handlers.Add(1)
	c.mu.Unlock()
	c.async.Handle(context.WithValue(ctx, callKey{}, cl), rpc, req)
}

// admitLocked applies the lifecycle rules to a request, in arrival order.
func (c *connection) admitLocked(method string) (early error, waitInit chan struct{}, isInit bool) {
	switch {
	case c.shutdown:
		return protocol.InvalidRequest("The server is shutting down; send exit."), nil, false
	case method == protocol.MethodInitialize:
		if c.state != stateNew {
			return protocol.InvalidRequest("initialize was already called on this connection."), nil, false
		}
		c.state = stateInitializing
		c.initDone = make(chan struct{})
		return nil, nil, true
	case method == protocol.MethodServerStop:
		// Accepted before initialize: a client whose protocol version this
		// familiar refuses must still be able to stop (and so replace) it.
		return nil, nil, false
	case c.state == stateNew:
		return protocol.ServerNotInitialized(), nil, false
	}
	if method == protocol.MethodShutdown {
		c.shutdown = true
	}
	if c.state == stateInitializing {
		return nil, c.initDone, false
	}
	return nil, nil, false
}

// serve runs one request on its own goroutine and sends exactly one response.
func (c *connection) serve(ctx context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	defer c.handlers.Done()
	defer func() { <-c.slots }()
	cl := ctx.Value(callKey{}).(*call)
	defer cl.cancel()
	start := time.Now()
	result, err := c.run(ctx, rpc, req, cl)
	if cl.registered {
		// Before replying: a client may reuse the id as soon as it has the
		// response.
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
	}
	c.reply(rpc, req, result, err, time.Since(start))
	if cl.isInit {
		c.finishInitialize(err == nil)
	}
}

func (c *connection) run(ctx context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request, cl *call) (any, error) {
	if c.srv.refusal != nil {
		return nil, c.srv.refusal
	}
	if cl.early != nil {
		return nil, cl.early
	}
	if cl.waitInit != nil {
		select {
		case <-cl.waitInit:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
		ready := c.state == stateReady
		c.mu.Unlock()
		if !ready {
			return nil, protocol.ServerNotInitialized()
		}
	}
	m, ok := methods[req.Method]
	if !ok {
		return nil, protocol.MethodNotFound(req.Method)
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if cl.isInit {
		// Subscribe before Initialize runs, so a notification it causes (the
		// missing-claude warning) is queued for this client; the queue is
		// sent only after the initialize response (finishInitialize).
		var p struct {
			OutputData *bool `json:"outputData"`
		}
		_ = json.Unmarshal(params, &p) // bad params: Initialize says which
		c.subscribe(rpc, p.OutputData != nil && !*p.OutputData)
	}
	result, err := m(ctx, c.srv.impl, params)
	if err != nil && ctx.Err() != nil {
		// Whatever the method made of its cancelled context, the client
		// cancelled (or left): answer -32800.
		err = fmt.Errorf("%w (the method returned: %v)", context.Canceled, err)
	}
	return result, err
}

func (c *connection) reply(rpc *jsonrpc2.Conn, req *jsonrpc2.Request, result any, err error, took time.Duration) {
	if err == nil {
		var body []byte
		if body, err = json.Marshal(result); err == nil {
			err = rpc.Reply(context.Background(), req.ID, json.RawMessage(body))
			c.log.Debug("request", "method", req.Method, "id", req.ID, "took", took)
			c.logSendError(req, err)
			return
		}
		err = fmt.Errorf("encoding the result of %s: %w", req.Method, err)
	}
	e := rpcError(err, c.log, req.Method)
	c.log.Debug("request failed", "method", req.Method, "id", req.ID, "took", took, "code", e.Code, "message", e.Message)
	c.logSendError(req, rpc.ReplyWithError(context.Background(), req.ID, e))
}

func (c *connection) logSendError(req *jsonrpc2.Request, err error) {
	if err != nil {
		// Almost always the client went away; nothing more to do.
		c.log.Debug("response not sent", "method", req.Method, "id", req.ID, "err", err)
	}
}

func (c *connection) subscribe(rpc *jsonrpc2.Conn, wakeOnly bool) {
	sub := c.srv.hub.subscribe(c.id, wakeOnly, func(method string, params json.RawMessage) error {
		return rpc.Notify(context.Background(), method, params)
	}, func() { rpc.Close() })
	c.mu.Lock()
	c.subscriber = sub
	c.mu.Unlock()
}

// finishInitialize opens the gate for requests that arrived meanwhile and
// starts (or, on failure, cancels) the notification subscription. It runs
// after the initialize response is written, so that response comes first.
func (c *connection) finishInitialize(ok bool) {
	c.mu.Lock()
	sub := c.subscriber
	if ok {
		c.state = stateReady
	} else {
		// The client may fix its params and call initialize again.
		c.state = stateNew
		c.subscriber = nil
	}
	close(c.initDone)
	c.initDone = nil
	c.mu.Unlock()
	switch {
	case sub == nil:
	case ok:
		sub.start()
	default:
		sub.detach()
	}
}

// notification handles the client's notifications on the read goroutine:
// both are cheap and must take effect in arrival order.
func (c *connection) notification(rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	switch req.Method {
	case protocol.MethodCancelRequest:
		var p struct {
			ID *jsonrpc2.ID `json:"id"`
		}
		if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil || p.ID == nil {
			c.log.Debug("ignoring $/cancelRequest without a usable id")
			return
		}
		c.mu.Lock()
		cancel := c.pending[*p.ID]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case protocol.MethodExit:
		c.log.Debug("exit received; closing the connection")
		rpc.Close()
	default:
		if !strings.HasPrefix(req.Method, "$/") {
			c.log.Debug("ignoring an unknown notification", "method", req.Method)
		}
	}
}

// handlerFunc lets a method value be a jsonrpc2.Handler.
type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// printfLogger routes jsonrpc2's own messages (protocol errors that ended a
// connection) to slog instead of its default, the standard logger.
type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
