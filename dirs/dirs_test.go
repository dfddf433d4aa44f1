package dirs

import (
	"errors"
	"testing"
)

func TestResolve(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, goos, home string
		env              func(string) string
		want             Dirs
		err              error
	}{
		{"linux defaults", "linux", "/home/ann", env(), Dirs{
			Config: "/home/ann/.config/familiar", Data: "/home/ann/.local/share/familiar", State: "/home/ann/.local/state/familiar",
			Worktrees: "/home/ann/.local/share/familiar/worktrees"}, nil},
		{"macOS defaults", "darwin", "/Users/ann", env(), Dirs{
			Config: "/Users/ann/Library/Application Support/familiar",
			Data:   "/Users/ann/Library/Application Support/familiar",
			State:  "/Users/ann/Library/Application Support/familiar/state",
			// No space in a worktree's path: builds stop at one.
			Worktrees: "/Users/ann/.familiar/worktrees"}, nil},
		{"XDG wins on macOS", "darwin", "/Users/ann", env("XDG_CONFIG_HOME", "/x/c", "XDG_DATA_HOME", "/x/d", "XDG_STATE_HOME", "/x/s"), Dirs{
			Config: "/x/c/familiar", Data: "/x/d/familiar", State: "/x/s/familiar", Worktrees: "/x/d/familiar/worktrees"}, nil},
		{"a relative XDG variable is ignored", "linux", "/home/ann", env("XDG_STATE_HOME", "rel/state"), Dirs{
			Config: "/home/ann/.config/familiar", Data: "/home/ann/.local/share/familiar", State: "/home/ann/.local/state/familiar",
			Worktrees: "/home/ann/.local/share/familiar/worktrees"}, nil},
		{"no home, all XDG", "linux", "", env("XDG_CONFIG_HOME", "/c", "XDG_DATA_HOME", "/d", "XDG_STATE_HOME", "/s"), Dirs{
			Config: "/c/familiar", Data: "/d/familiar", State: "/s/familiar", Worktrees: "/d/familiar/worktrees"}, nil},
		{"no home, one XDG", "darwin", "", env("XDG_STATE_HOME", "/s"), Dirs{State: "/s/familiar"}, ErrNoHome},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolve(c.goos, c.env, c.home)
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("got %+v, %v\nwant %+v, %v", got, err, c.want, c.err)
			}
		})
	}
}

// What build tools stop at in a path is named; an ordinary path is fine.
func TestBuildUnsafe(t *testing.T) {
	for path, want := range map[string]string{
		"/Users/ann/.familiar/worktrees/app-1a2b3c4d/7-fix":         "",
		"/Users/ann/Library/Application Support/familiar/worktrees": "a space",
		"/home/ann/my#repo/wt:1":                                    `'#', ':'`,
		"/home/ann/a b/c d$x":                                       `a space, '$'`,
		"/home/ann/tab\there":                                       `whitespace '\t'`,
		"/home/ann/é-ü_ok.-+@,=%~":                                  "",
	} {
		if got := BuildUnsafe(path); got != want {
			t.Errorf("BuildUnsafe(%q) = %q, want %q", path, got, want)
		}
	}
}
