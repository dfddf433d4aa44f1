package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// Client is a JSON-RPC client of a running familiar, for familiar's own
// commands that ask the daemon rather than open its state behind its back
// (familiar audit export) and for measuring what a client sees (familiar
// bench). It speaks the same framing as editors do.
type Client struct {
	conn *jsonrpc2.Conn
}

// Dial connects to the familiar listening on socketPath and initializes
// the connection with init. onNotify, when not nil, gets every notification
// in the order of arrival, on the connection's reading goroutine (it must
// not block, nor call the client). Close the client when done.
func Dial(ctx context.Context, socketPath string, init protocol.InitializeParams, onNotify func(method string, params json.RawMessage)) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("connecting to familiar at %s: %w", socketPath, err)
	}
	// The connection's own context, not ctx: ctx bounds the dial and the
	// calls, the connection lives until Close.
	// The LSP framing as jsonrpc2 writes it; the server's own frameStream is
	// server-side only (it drops responses, as familiar sends no requests).
	stream := jsonrpc2.NewBufferedStream(nc, jsonrpc2.VSCodeObjectCodec{})
	conn := jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Notif && onNotify != nil && req.Params != nil {
				onNotify(req.Method, *req.Params)
			}
			return nil, nil
		}))
	c := &Client{conn: conn}
	var res protocol.InitializeResult
	if err := c.Call(ctx, protocol.MethodInitialize, init, &res); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Call sends a request and decodes its result into result (nil: ignore it).
// An error response is returned as a *jsonrpc2.Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if err := c.conn.Call(ctx, method, params, result); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// Close closes the connection and waits for its reader to stop.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.conn.DisconnectNotify()
	return err
}
