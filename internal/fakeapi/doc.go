// Package fakeapi is a scripted fake of the Anthropic Messages API for tests:
// it streams (SSE) the text or tool_use each request is scripted to get and
// logs every request so tests can assert what reached the model.
//
// It is for tests and the demo only; it never talks to the real API.
package fakeapi
