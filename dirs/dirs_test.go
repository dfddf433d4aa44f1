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
			Config: "/home/ann/.config/familiar", Data: "/home/ann/.local/share/familiar", State: "/home/ann/.local/state/familiar"}, nil},
		{"macOS defaults", "darwin", "/Users/ann", env(), Dirs{
			Config: "/Users/ann/Library/Application Support/familiar",
			Data:   "/Users/ann/Library/Application Support/familiar",
			State:  "/Users/ann/Library/Application Support/familiar/state"}, nil},
		{"XDG wins on macOS", "darwin", "/Users/ann", env("XDG_CONFIG_HOME", "/x/c", "XDG_DATA_HOME", "/x/d", "XDG_STATE_HOME", "/x/s"), Dirs{
			Config: "/x/c/familiar", Data: "/x/d/familiar", State: "/x/s/familiar"}, nil},
		{"a relative XDG variable is ignored", "linux", "/home/ann", env("XDG_STATE_HOME", "rel/state"), Dirs{
			Config: "/home/ann/.config/familiar", Data: "/home/ann/.local/share/familiar", State: "/home/ann/.local/state/familiar"}, nil},
		{"no home, all XDG", "linux", "", env("XDG_CONFIG_HOME", "/c", "XDG_DATA_HOME", "/d", "XDG_STATE_HOME", "/s"), Dirs{
			Config: "/c/familiar", Data: "/d/familiar", State: "/s/familiar"}, nil},
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
