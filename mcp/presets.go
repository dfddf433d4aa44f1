package mcp

import "slices"

// Preset is a ready-made server config (mcp/presets). Requires lists what
// must be present for it to work: commands on PATH and, in capitals,
// environment variables.
type Preset struct {
	Name     string
	Server   Server
	Requires []string
}

// GitHubTokenVar is the environment variable the github preset reads its
// token from. The config names it, never holds it: the token is resolved
// from familiar's environment into the per-task file only.
const GitHubTokenVar = "GITHUB_PERSONAL_ACCESS_TOKEN"

// Presets returns the presets. With worktree "" the filesystem preset is
// scoped to ${FAMILIAR_WORKTREE}, which Expand turns into each task's own
// worktree; that is the form to copy into settings.
func Presets(worktree string) []Preset {
	root := worktree
	if root == "" {
		root = "${" + WorktreeVar + "}"
	}
	return []Preset{
		{
			Name:     "filesystem",
			Server:   Server{Type: TypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", root}},
			Requires: []string{"npx"},
		},
		{
			Name:     "github",
			Server:   Server{Type: TypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: map[string]string{GitHubTokenVar: "${" + GitHubTokenVar + "}"}},
			Requires: []string{"npx", GitHubTokenVar},
		},
		{
			Name:     "puppeteer",
			Server:   Server{Type: TypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-puppeteer"}},
			Requires: []string{"npx"},
		},
	}
}

// PresetNamed returns the preset called name.
func PresetNamed(name, worktree string) (Preset, bool) {
	ps := Presets(worktree)
	i := slices.IndexFunc(ps, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		return Preset{}, false
	}
	return ps[i], true
}
