package screen

// RendererEnv returns the environment that pins how claude draws its TUI, so
// the screens familiar classifies are the screens recorded in testdata. The
// driver adds it to every PTY session's environment; the recorder uses the
// same. Each call returns a new map.
//
// CLAUDE_CODE_NO_FLICKER=1 forces the fullscreen renderer (alternate screen,
// absolute positioning, the input box and footer always at the bottom rows).
// Without it the CLI picks fullscreen or the classic inline renderer from its
// config (first-start version, upsell counters) and a feature gate, so the
// same binary can draw either way. Fullscreen is the one to pin: it is what
// the CLI shows by default (CLAUDE-CLI.md §Part A), a snapshot holds exactly
// the current view with no scrolled-off remains of earlier frames, and a
// dialog taller than the window cannot push the prompt out of sight.
//
// TERM names what the emulator answers as (xterm-style, 256 colours); left to
// the caller's environment it could be "dumb" or missing under a service
// manager, which changes what the CLI draws.
func RendererEnv() map[string]string {
	return map[string]string{
		"CLAUDE_CODE_NO_FLICKER": "1",
		"TERM":                   "xterm-256color",
	}
}
