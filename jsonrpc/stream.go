package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// MaxFrameSize is the largest frame body familiar reads (PROTOCOL.md).
const MaxFrameSize = 16 << 20

const (
	// maxHeaderBytes bounds the header block of one frame; real clients send
	// one or two short lines.
	maxHeaderBytes = 8 << 10
	// readBufferSize is also the longest single header line ReadSlice accepts.
	readBufferSize = 32 << 10
)

// frameStream is a jsonrpc2.ObjectStream speaking LSP framing. It replaces
// jsonrpc2.VSCodeObjectCodec, which cannot do what PROTOCOL.md asks: any
// decode error from it ends the connection (no -32700-and-continue), it has no
// size limit (a 4 GiB Content-Length is read into memory), and a request
// with a float or negative id kills the jsonrpc2.Conn.
//
// ReadObject therefore answers bad frames itself, on the same stream, and
// goes on to the next frame:
//   - body not JSON → -32700, id null;
//   - Content-Length over maxBody → the body is read and discarded in
//     bufio-sized pieces (never held whole), then -32600, id null;
//   - not a JSON-RPC 2.0 request → -32600, with the request's id when it
//     has a usable one.
//
// Only a broken header block (no Content-Length, a line that is not
// "Name: value", headers over 8 KiB) ends the connection, after a -32700
// answer: without a trustworthy length there is no way to find the next
// frame.
type frameStream struct {
	rwc     io.ReadWriteCloser
	r       *bufio.Reader
	log     *slog.Logger
	maxBody int64
	// drain runs on a clean end of input (EOF between frames) before
	// ReadObject reports it, so requests already read still get their
	// responses from a client that half-closes (see ServeConn).
	drain func()

	wmu sync.Mutex // one frame on the wire at a time

	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	closed  bool  // guarded by mu: Close was called
	readErr error // guarded by mu: what ended reading, for ServeConn's result
}

func newFrameStream(rwc io.ReadWriteCloser, log *slog.Logger) *frameStream {
	return &frameStream{
		rwc:     rwc,
		r:       bufio.NewReaderSize(rwc, readBufferSize),
		log:     log,
		maxBody: MaxFrameSize,
	}
}

// errFraming is a header block that cannot be parsed; the connection ends.
type errFraming struct{ msg string }

func (e *errFraming) Error() string { return e.msg }

// ReadObject implements jsonrpc2.ObjectStream. v is jsonrpc2's message type.
func (s *frameStream) ReadObject(v any) error {
	for {
		if s.isClosed() {
			// Frames still buffered after exit or a drop are not served.
			return net.ErrClosed
		}
		body, rejected, err := s.readFrame()
		if err != nil {
			var fe *errFraming
			if errors.As(err, &fe) {
				// Best effort: the peer may not be reading; the connection ends anyway.
				_ = s.writeError(nil, protocol.ParseError(fe.msg))
			}
			if errors.Is(err, io.EOF) && s.drain != nil {
				s.drain()
			}
			s.setReadErr(err)
			return err
		}
		if rejected != nil {
			if err := s.writeError(nil, rejected); err != nil {
				return err
			}
			continue
		}
		id, rejected, isResponse := checkRequest(body)
		if isResponse {
			// familiar sends no requests, so there is nothing to match it to.
			s.log.Debug("ignoring a response from the client", "id", string(id))
			continue
		}
		if rejected == nil {
			if err := json.Unmarshal(body, v); err != nil {
				// checkRequest should have caught everything jsonrpc2 refuses;
				// answering keeps the connection alive if it did not.
				s.log.Warn("jsonrpc2 refused a request that passed checks", "err", err)
				rejected = protocol.InvalidRequest("The message is not a JSON-RPC 2.0 request familiar can read.")
			}
		}
		if rejected != nil {
			if err := s.writeError(id, rejected); err != nil {
				return err
			}
			continue
		}
		return nil
	}
}

// readFrame reads one frame. It returns the body, or a rejection for a frame
// that was skipped (the stream is still in sync), or an error that ends the
// connection: io.EOF between frames, io.ErrUnexpectedEOF inside one,
// *errFraming, or the reader's error.
func (s *frameStream) readFrame() (body []byte, rejected *protocol.Error, err error) {
	length := int64(-1)
	headerBytes := 0
	for first := true; ; first = false {
		line, err := s.r.ReadSlice('\n')
		switch {
		case err == io.EOF && first && len(line) == 0:
			return nil, nil, io.EOF
		case err == io.EOF:
			return nil, nil, io.ErrUnexpectedEOF
		case err == bufio.ErrBufferFull:
			return nil, nil, &errFraming{"A frame header line is too long."}
		case err != nil:
			return nil, nil, err
		}
		if headerBytes += len(line); headerBytes > maxHeaderBytes {
			return nil, nil, &errFraming{"The frame headers are too long."}
		}
		// LSP requires \r\n; a bare \n costs nothing to accept.
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, nil, &errFraming{"A frame header is not of the form \"Name: value\"."}
		}
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if err != nil || n < 0 {
				return nil, nil, &errFraming{"Content-Length must be a non-negative integer."}
			}
			length = n
		}
	}
	if length < 0 {
		return nil, nil, &errFraming{"The frame has no Content-Length header."}
	}
	if length > s.maxBody {
		if _, err := io.CopyN(io.Discard, s.r, length); err != nil {
			return nil, nil, unexpected(err)
		}
		return nil, protocol.InvalidRequest(fmt.Sprintf(
			"The message is %d bytes; familiar accepts at most %d.", length, s.maxBody)), nil
	}
	body = make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, nil, unexpected(err)
	}
	return body, nil, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// checkRequest decides whether body is a request jsonrpc2 can take. It
// returns the request's id when usable (so a rejection can carry it), a
// rejection, or isResponse for a response object (which has no method).
func checkRequest(body []byte) (id json.RawMessage, rejected *protocol.Error, isResponse bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, protocol.ParseError(fmt.Sprintf("The message is not valid JSON (%v).", se)), false
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
			return nil, protocol.InvalidRequest("Batches are not supported; send one request object per frame."), false
		}
		return nil, protocol.InvalidRequest("The message must be a JSON-RPC 2.0 request object."), false
	}
	if m == nil { // the body was null
		return nil, protocol.InvalidRequest("The message must be a JSON-RPC 2.0 request object."), false
	}
	if raw, ok := m["id"]; ok {
		if !usableID(raw) {
			return nil, protocol.InvalidRequest("The request id must be a string or a non-negative integer."), false
		}
		id = raw
	}
	var version string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return id, protocol.InvalidRequest(`The message must have "jsonrpc": "2.0".`), false
	}
	rawMethod, ok := m["method"]
	if !ok {
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if hasResult || hasError {
			return id, nil, true
		}
		return id, protocol.InvalidRequest("The request has no method."), false
	}
	var method string
	if json.Unmarshal(rawMethod, &method) != nil || method == "" {
		return id, protocol.InvalidRequest("The request's method must be a non-empty string."), false
	}
	if p, ok := m["params"]; ok {
		if p = bytes.TrimSpace(p); p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
			return id, protocol.InvalidRequest("The request's params must be an object."), false
		}
	}
	return id, nil, false
}

// usableID accepts what jsonrpc2.ID round-trips: a string, or an integer
// that fits int64 and is not negative (jsonrpc2 stores ids as uint64).
func usableID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= 0
}

// errorResponse is written by the stream itself, because jsonrpc2.Response
// cannot carry a null id.
type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"` // nil marshals as null
	Error   *jsonrpc2.Error `json:"error"`
}

func (s *frameStream) writeError(id json.RawMessage, e *protocol.Error) error {
	s.log.Debug("rejecting a message", "code", e.Code, "reason", e.Message)
	return s.WriteObject(errorResponse{JSONRPC: "2.0", ID: id, Error: rpcError(e, s.log, "")})
}

// WriteObject implements jsonrpc2.ObjectStream: one frame per call, header
// and body in a single Write so frames never interleave.
func (s *frameStream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	frame := make([]byte, 0, len(body)+32)
	frame = fmt.Appendf(frame, "Content-Length: %d\r\n\r\n", len(body))
	frame = append(frame, body...)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.rwc.Write(frame)
	return err
}

// Close implements jsonrpc2.ObjectStream; it may be called more than once.
func (s *frameStream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.closeOnce.Do(func() { s.closeErr = s.rwc.Close() })
	return s.closeErr
}

func (s *frameStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *frameStream) setReadErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A read failing because we closed the stream is not the peer's fault.
	if !s.closed {
		s.readErr = err
	}
}

// err is what ended reading: nil for a clean end (EOF, or closed by us).
func (s *frameStream) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(s.readErr, io.EOF) {
		return nil
	}
	return s.readErr
}
