package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	ok, missing, weaker := Availability{OK: true}, Availability{Why: "bubblewrap not installed"}, Availability{OK: true, Weaker: true, Why: "no /proc"}
	for _, tc := range []struct {
		mode       Mode
		a          Availability
		enabled    bool
		unconfined string
		err        bool
	}{
		{On, ok, true, "", false},
		{"", ok, true, "", false},
		{On, missing, false, "no sandbox on this machine (bubblewrap not installed)", false},
		{Off, ok, false, "sandbox: off", false},
		{Required, ok, true, "", false},
		{Required, missing, false, "", true},
		{On, weaker, true, "", false},
		{"sometimes", ok, false, "", true},
	} {
		p, err := Decide(tc.mode, tc.a)
		if (err != nil) != tc.err || p.Enabled != tc.enabled || tc.unconfined != "" && !strings.Contains(p.Unconfined, tc.unconfined) || tc.unconfined == "" && p.Unconfined != "" {
			t.Errorf("Decide(%q, %+v) = %+v, %v", tc.mode, tc.a, p, err)
		}
		if tc.mode == Required && !tc.a.OK && (!errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "bubblewrap not installed")) {
			t.Errorf("required without a sandbox: %v", err)
		}
	}
	s := Settings(Plan{Enabled: true, Weaker: true}, []string{"go.dev"})
	if s["enabled"] != true || s["enableWeakerNestedSandbox"] != true || s["autoAllowBashIfSandboxed"] != false {
		t.Errorf("Settings = %v", s)
	}
	if n := s["network"].(map[string]any); n["strictAllowlist"] != true || !slices.Contains(n["allowedDomains"].([]string), "go.dev") {
		t.Errorf("an allow-list: %v", n)
	}
	if n := Settings(Plan{Enabled: true}, nil)["network"].(map[string]any); !slices.Equal(n["allowedDomains"].([]string), []string{"*"}) || n["strictAllowlist"] != nil {
		t.Errorf("the open network: %v", n)
	}
	if Settings(Plan{}, nil) != nil {
		t.Error("settings for an unconfined plan")
	}
}

// TestCheck runs the real check: on Linux with bubblewrap and socat
// installed it finds a sandbox (CI installs both).
func TestCheck(t *testing.T) {
	a := Check(context.Background())
	t.Logf("%s: %+v", runtime.GOOS, a)
	if !a.OK && a.Why == "" {
		t.Fatal("not available, and no reason")
	}
	if runtime.GOOS == "linux" {
		_, e1 := exec.LookPath("bwrap")
		_, e2 := exec.LookPath("socat")
		if e1 == nil && e2 == nil && !a.OK {
			t.Logf("bubblewrap and socat are installed but no sandbox: %s", a.Why)
		}
	}
}
