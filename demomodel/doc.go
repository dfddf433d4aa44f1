// Package demomodel is a scripted model behind a fake of the Anthropic
// Messages API, served with net/http on 127.0.0.1: it streams (SSE) the text
// or tool_use each request is scripted to get and logs every request, so a
// caller can see what reached the model.
//
// familiar uses it where no real model may be used: `familiar demo` and
// `familiar run --demo-model` (Demo, a clearly labelled scripted model),
// `familiar bench` (the same scripted API for every system it compares), and
// the tests, through internal/fakeapi. It never talks to the real API or to
// anything beyond its own loopback listener, and it starts no process: the
// caller runs claude with Server.Env.
//
// # Use
//
//	srv := demomodel.Start(demomodel.PromptScript())
//	defer srv.Close()
//	agent.SeedConfigDir(cfg, repo, demomodel.APIKey)
//	cmd.Env = agent.SessionEnv(os.Environ(), cfg, srv.Env())
//	// prompt: "make a file\n@@TOOL Bash {\"command\":\"touch x\"}\n@@TEXT Made it."
//
// A Script maps each request to a Reply. PromptScript reads the replies from
// directives in the user's prompt (see DirectiveTool), so most tests only
// choose a prompt; Sequence replays a fixed list; any func(Request) Reply
// will do.
//
// # What the CLI sends (claude 2.1.330, captured in testdata/requests)
//
// With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, as Env sets it, the CLI
// calls only POST /v1/messages?beta=true, streaming, one request per model
// turn, in -p mode and in the TUI alike: no side requests at all. A request's
// messages hold the prompt (after <system-reminder> text blocks the CLI adds),
// a system-role "# Environment" entry (after the prompt, not necessarily
// last), then the assistant turns and tool_result messages.
//
// Side requests (Request.SideKind) appear otherwise: with non-essential
// traffic enabled the TUI asks for a session title after every prompt (no
// tools, no thinking, a json_schema output format with a "title"), and the
// CLI calls /api/hello on the base URL; /compact sends the conversation plus
// a summary request. They get answers of the shape the CLI expects
// (SideReply), so they never consume a scripted step.
//
// On an HTTP 400 the CLI resends the turn with fewer beta features (five
// resends observed); on a 5xx or 429 it retries with backoff unless the
// answer says x-should-retry: false, which error replies do unless
// Reply.Retryable. Either way the turn ends with an error result.
package demomodel
