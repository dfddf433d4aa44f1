package fakeserver

import "github.com/familiar-dev/familiar/protocol"

// Unimplemented answers every protocol.Server method with -32601 naming the
// Go method, so a test's fake can implement only what its test needs (embed
// it). Production code implements protocol.Server whole; this is in
// internal/ so it cannot lean on it. Its methods are generated from
// protocol.Server (unimplemented_gen.go, by protocol/gogen).
type Unimplemented struct{}

var _ protocol.Server = Unimplemented{}

// NotImplemented is the error every method of Unimplemented returns.
func NotImplemented(goMethod string) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "The fake familiar does not implement " + goMethod + "."}
}
