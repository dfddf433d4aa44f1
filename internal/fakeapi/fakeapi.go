// Package fakeapi is the scripted fake Anthropic Messages API as tests name
// it: the server, scripts and request decoding live in package demomodel,
// which the production binary uses for `familiar demo`, `run --demo-model`
// and `familiar bench`; this package gives tests the same things under the
// name they have always used, so no test fixture is duplicated and no test
// helper is linked into familiar.
//
// See demomodel's package doc for how a script answers and what the CLI
// sends.
//
// # Use
//
//	srv := fakeapi.Start(fakeapi.PromptScript())
//	defer srv.Close()
//	agent.SeedConfigDir(cfg, repo, fakeapi.APIKey)
//	cmd.Env = agent.SessionEnv(os.Environ(), cfg, srv.Env())
//	// prompt: "make a file\n@@TOOL Bash {\"command\":\"touch x\"}\n@@TEXT Made it."
package fakeapi

import (
	"time"

	"github.com/familiar-dev/familiar/demomodel"
)

type (
	Server   = demomodel.Server
	Script   = demomodel.Script
	Reply    = demomodel.Reply
	ToolUse  = demomodel.ToolUse
	Request  = demomodel.Request
	Message  = demomodel.Message
	Block    = demomodel.Block
	SideKind = demomodel.SideKind
	Event    = demomodel.Event
)

// APIKey is the key Server.Env hands the CLI.
const APIKey = demomodel.APIKey

// Side request kinds (see demomodel.SideKind).
const (
	SideNone    = demomodel.SideNone
	SideQuota   = demomodel.SideQuota
	SideTitle   = demomodel.SideTitle
	SideCompact = demomodel.SideCompact
	SideHelper  = demomodel.SideHelper
)

// Start starts a scripted server on loopback; Close it when done.
func Start(script Script) *Server { return demomodel.Start(script) }

// PromptScript answers from the @@ directives in each conversation's prompt.
func PromptScript() Script { return demomodel.PromptScript() }

// Sequence answers the main requests with replies in order.
func Sequence(replies ...Reply) Script { return demomodel.Sequence(replies...) }

// ParseDirectives returns the replies a prompt's @@ directives script.
func ParseDirectives(prompt string) []Reply { return demomodel.ParseDirectives(prompt) }

// UsageLimitReply is the 429 a subscription gets at its usage limit (see
// demomodel.UsageLimitReply).
func UsageLimitReply(resetsAt time.Time) Reply { return demomodel.UsageLimitReply(resetsAt) }

// SideReply is a harmless answer of the shape a side request expects.
func SideReply(req Request) Reply { return demomodel.SideReply(req) }
