// Package release is what familiar ships as: its version, one source for the
// binary, the VS Code extension and the ACP Registry entry (a test checks
// they agree), and the notices of the third-party software every binary
// links, which their licences require it to carry.
package release

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

// Version is familiar's release version (semantic versioning). The
// extension's package.json and editors/acp-registry/familiar/agent.json say
// the same (TestVersionsAgree); `make dist` stamps it, with the commit when
// HEAD is not a release tag.
const Version = "0.2.0"

// Notices is familiar's NOTICE and LICENSE followed by the licence and
// notice texts of every module linked into the binary and every package
// bundled into the VS Code extension. Generated (TestThirdParty).
//
//go:embed THIRD-PARTY-NOTICES.txt
var Notices string

// BuildVersion is the version a binary reports: the one stamped at build
// time (-ldflags "-X main.version=…") when there is one; else the module's
// version a `go install …@v0.2.0` records in the build info; else Version
// marked as a development build, with the commit when the build info has
// it (a build from a checkout, which Go stamps with a v0.0.0 pseudo-version
// or "(devel)": neither says which familiar it is).
func BuildVersion(stamped string, info *debug.BuildInfo) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	if info == nil {
		return Version + "-dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" && !strings.HasPrefix(v, "v0.0.0-") {
		return strings.TrimPrefix(v, "v")
	}
	v := Version + "-dev"
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += "+" + rev
		if dirty {
			v += "-dirty"
		}
	}
	return v
}
