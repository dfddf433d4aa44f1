// Package rpcclient is the one client of familiar's JSON-RPC protocol, for
// familiar's own programs that talk to a running familiar: familiar acp,
// the daemon's join and stop, familiar audit export and familiar bench.
// Client implements protocol.Server, so each method of PROTOCOL.md is one
// typed call, and a method added to protocol.Server without its call here
// does not compile.
//
// It speaks the LSP framing as editors do (jsonrpc2's VSCodeObjectCodec;
// the server's own frame stream in package jsonrpc is server-side only), and
// returns a familiar's error answers as *protocol.Error, so a caller tests
// their kind with errors.Is/As as the server's side does.
package rpcclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// ErrClosed is returned by a call whose connection ended before its answer.
var ErrClosed = jsonrpc2.ErrClosed

// Client is one connection to a familiar.
type Client struct {
	conn *jsonrpc2.Conn
}

var _ protocol.Server = (*Client)(nil)

// New speaks the protocol over rwc (a socket, a child's stdio). onNotify,
// when not nil, gets every notification in the order of arrival, on the
// connection's reading goroutine: it must not block, nor call the client.
// The connection is not initialized: call Initialize first. Close the
// client when done; it closes rwc.
func New(rwc io.ReadWriteCloser, onNotify func(method string, params json.RawMessage)) *Client {
	// The connection's own context, not a caller's: contexts bound calls,
	// the connection lives until Close.
	stream := jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{})
	return &Client{conn: jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Notif && onNotify != nil && req.Params != nil {
				onNotify(req.Method, *req.Params)
			}
			// familiar sends no requests; a reply to one would be dropped.
			return nil, nil
		}))}
}

// Dial connects to the familiar listening on socketPath and initializes
// the connection with init (see New for onNotify).
func Dial(ctx context.Context, socketPath string, init protocol.InitializeParams, onNotify func(method string, params json.RawMessage)) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("connecting to familiar at %s: %w", socketPath, err)
	}
	c := New(nc, onNotify)
	if _, err := c.Initialize(ctx, &init); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Call sends a request and decodes its result into result (nil: ignore
// it). An error answer is returned as a *protocol.Error (its Data the raw
// JSON, a json.RawMessage) as it is, because its message is written for a
// person; any other failure (the connection ended, ctx is done) is wrapped
// with the method's name. Prefer the typed calls; Call is for a method
// this client predates.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	err := c.conn.Call(ctx, method, params, result)
	if err == nil {
		return nil
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		pe := &protocol.Error{Code: int(je.Code), Message: je.Message}
		if je.Data != nil {
			pe.Data = *je.Data
		}
		return pe
	}
	return fmt.Errorf("%s: %w", method, err)
}

// Close closes the connection and waits for its reader to stop.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.conn.DisconnectNotify()
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.conn.DisconnectNotify() }

// IsCode says whether err is a familiar's answer of code.
func IsCode(err error, code int) bool {
	return errors.Is(err, &protocol.Error{Code: code})
}

// call is one typed call: R is the result's type.
func call[R any](ctx context.Context, c *Client, method string, p any) (*R, error) {
	r := new(R)
	if err := c.Call(ctx, method, p, r); err != nil {
		return nil, err
	}
	return r, nil
}

// list is a typed call whose result is an array.
func list[R any](ctx context.Context, c *Client, method string, p any) ([]R, error) {
	var r []R
	if err := c.Call(ctx, method, p, &r); err != nil {
		return nil, err
	}
	return r, nil
}
