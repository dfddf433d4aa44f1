package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/familiar-dev/familiar/protocol"
)

// JSON-RPC error codes ACP uses.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeNotFound       = -32002 // ACP's resource_not_found
	codeAuthRequired   = -32000 // ACP's auth_required
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

func invalidParams(field, msg string) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: msg, Data: map[string]string{"field": field}}
}

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// handler answers one request (result or error) or handles one notification
// (its result is dropped).
type handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// conn is one newline-delimited JSON-RPC peer on a reader and a writer.
// Requests are handled on their own goroutines, so a long session/prompt
// never blocks reading its session/cancel.
type conn struct {
	in     io.Reader
	out    io.Writer
	handle handler
	logger *slog.Logger

	writeMu sync.Mutex // one line at a time

	mu      sync.Mutex
	nextID  int64                         // guarded by mu
	waiting map[string]chan *message      // guarded by mu; our requests by id
	cancels map[string]context.CancelFunc // guarded by mu; their requests by id
	wg      sync.WaitGroup                // request handlers
}

// maxLine bounds one incoming message.
const maxLine = 64 << 20

func newConn(in io.Reader, out io.Writer, h handler, logger *slog.Logger) *conn {
	return &conn{in: in, out: out, handle: h, logger: logger,
		waiting: map[string]chan *message{}, cancels: map[string]context.CancelFunc{}}
}

// serve reads until EOF or ctx ends, then waits for the handlers it started.
func (c *conn) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.wg.Wait()
		c.mu.Lock()
		for id, ch := range c.waiting {
			close(ch)
			delete(c.waiting, id)
		}
		c.mu.Unlock()
	}()
	sc := bufio.NewScanner(c.in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			c.send(message{ID: json.RawMessage("null"), Error: &rpcError{Code: codeParseError, Message: "The message is not JSON."}})
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			c.request(ctx, m)
		case m.Method != "":
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				if _, err := c.handle(ctx, m.Method, m.Params); err != nil {
					c.logger.Debug("notification", "method", m.Method, "err", err)
				}
			}()
		case len(m.ID) > 0:
			c.mu.Lock()
			ch := c.waiting[string(m.ID)]
			delete(c.waiting, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- &m
			}
		default:
			c.send(message{ID: json.RawMessage("null"), Error: &rpcError{Code: codeInvalidRequest, Message: "The message is neither a request, a notification nor a response."}})
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

func (c *conn) request(ctx context.Context, m message) {
	ctx, cancel := context.WithCancel(ctx)
	key := string(m.ID)
	c.mu.Lock()
	c.cancels[key] = cancel
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.cancels, key)
			c.mu.Unlock()
			cancel()
		}()
		res, err := c.handle(ctx, m.Method, m.Params)
		var then func()
		if r, ok := res.(replied); ok {
			res, then = r.result, r.then
		}
		reply := message{ID: m.ID}
		if err != nil {
			var re *rpcError
			if !errors.As(err, &re) {
				re = errorOf(err, m.Method, c.logger)
			}
			reply.Error = re
		} else {
			b, err := json.Marshal(res)
			if err != nil {
				reply.Error = &rpcError{Code: codeInternal, Message: "encode result: " + err.Error()}
			} else {
				reply.Result = b
			}
		}
		c.send(reply)
		if then != nil && reply.Error == nil {
			then()
		}
	}()
}

// replied is a handler's result with something to do once the response is
// written: an update naming a new session must not reach the client before
// the response that gives it the session id.
type replied struct {
	result any
	then   func()
}

// cancelIncoming cancels a request of the client's ($/cancel_request).
func (c *conn) cancelIncoming(id json.RawMessage) {
	c.mu.Lock()
	cancel := c.cancels[string(id)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// call sends a request to the client and waits for its answer. When ctx ends
// first, the client is told with $/cancel_request and call returns ctx.Err().
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	ch := make(chan *message, 1)
	c.waiting[string(id)] = ch
	c.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if err := c.send(message{ID: id, Method: method, Params: p}); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return errors.New("the client went away")
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiting, string(id))
		c.mu.Unlock()
		_ = c.notify("$/cancel_request", map[string]any{"requestId": json.RawMessage(id)})
		return ctx.Err()
	}
}

func (c *conn) notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	return c.send(message{Method: method, Params: p})
}

func (c *conn) send(m message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	b = append(b, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.out.Write(b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// errorOf is the one way an error reaches the ACP client (issue 38), by
// the policy of familiar's own wire mapper (protocol.Wire): an ACP error
// as it is; familiar's answer (a *protocol.Error, already words for a
// person) with its message, familiar's codes mapped to ACP's; anything
// else — a lost connection, a file system error, text from deep down that
// may hold paths or command lines — as a fixed sentence naming what
// failed, the error itself to the log only.
func errorOf(err error, what string, logger *slog.Logger) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		code := codeInternal
		switch pe.Code {
		case protocol.CodeInvalidParams:
			code = codeInvalidParams
		case protocol.CodeNotFound:
			code = codeNotFound
		case protocol.CodeFailedPrecondition, protocol.CodeConflict:
			code = codeInvalidRequest
		}
		msg := pe.Message
		if what != "" {
			msg = what + ": " + msg
		}
		return &rpcError{Code: code, Message: msg}
	}
	if logger != nil {
		logger.Warn("acp: request failed", "what", what, "err", err)
	}
	if what == "" {
		what = "familiar acp"
	}
	return &rpcError{Code: codeInternal, Message: what + " failed with an internal error; familiar acp's log has the details."}
}
