// Package daemon is the background familiar that outlives its editors (the
// model is `gopls -remote=auto`): `familiar serve --stdio` only forwards the
// editor's stdio to one familiar per repository, started on first use in its
// own session with its own log, and reached through the unix socket in the
// repository's data dir.
//
// It owns:
//   - Join (join.go): connect to the daemon of a data dir, starting it under
//     a start lock when nobody listens (two editors starting at the same
//     instant get one daemon), and replacing an idle daemon of another
//     version.
//   - Info (info.go): what a running daemon publishes in daemon.json (pid,
//     version, protocol version), so a client can tell whom it joined.
//   - WaitIdle (idle.go): when the daemon may exit by itself — no client
//     connected and nothing queued, running or waiting, for idleExitSec.
//   - Service (service.go): the protocol.Server the daemon serves: the
//     orchestrator's, except that an editor's shutdown never stops agents,
//     server/stop stops them on purpose, and a client speaking another
//     protocol version is refused with both versions named.
//
// The daemon itself is wired in cmd/familiar (serve --daemon).
package daemon
