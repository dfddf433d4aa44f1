package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// familiar runs the real binary (this test binary as familiar's main).
func familiar(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = t.TempDir() // not a repository: nothing may depend on one
	cmd.Env = append(os.Environ(), mainEnv+"=1", "FAMILIAR_CLAUDE=/nonexistent/claude")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestEverySubcommandHasHelp(t *testing.T) {
	for _, c := range [][]string{{"serve"}, {"acp"}, {"stop"}, {"run"}, {"demo"}, {"audit"}, {"audit", "export"}, {"bench"}, {"doctor"}, {"version"}} {
		for _, flag := range []string{"--help", "-h"} {
			out, errOut, code := familiar(t, append(c, flag)...)
			name := strings.Join(c, " ")
			if code != 0 || !strings.Contains(out, "Usage: familiar "+c[0]) || !strings.Contains(out, "Exit codes:") {
				t.Errorf("familiar %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, flag, code, out, errOut)
			}
		}
	}
	// doctor --help prints help and runs no check.
	if out, _, _ := familiar(t, "doctor", "--help"); strings.Contains(out, "FAIL") || strings.Contains(out, "ok  ") {
		t.Errorf("doctor --help ran the checks:\n%s", out)
	}
	// run --help describes the tasks file and Ctrl-C.
	out, _, _ := familiar(t, "run", "--help")
	for _, want := range []string{"tasks:", "permissionPolicy", "Ctrl-C once", "twice", "-json", "-demo-model"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help does not mention %q", want)
		}
	}
	// familiar help run is run --help.
	if again, _, code := familiar(t, "help", "run"); code != 0 || again != out {
		t.Errorf("familiar help run differs from run --help (exit %d)", code)
	}
}

func TestTopLevelHelpListsEverySubcommand(t *testing.T) {
	out, _, code := familiar(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"serve", "acp", "stop", "run", "demo", "audit export", "bench", "doctor", "version", "README", "PROTOCOL.md"} {
		if !strings.Contains(out, c) {
			t.Errorf("familiar --help does not mention %q:\n%s", c, out)
		}
	}
	if _, errOut, code := familiar(t, "nonsense"); code != 2 || !strings.Contains(errOut, `unknown command "nonsense"`) {
		t.Errorf("unknown command: exit %d, %s", code, errOut)
	}
}

// doctor --help names the oldest claude familiar accepts, the one the code
// checks (it once said the pinned version instead).
func TestDoctorHelpNamesTheOldestSupportedClaude(t *testing.T) {
	if !strings.Contains(doctorHelp, "version at least "+agent.MinVersion+")") {
		t.Errorf("doctor --help does not name %s:\n%s", agent.MinVersion, doctorHelp)
	}
}

// The VS Code extension reads version --json to refuse a binary of another
// protocol before it runs it.
func TestVersionNamesTheProtocol(t *testing.T) {
	out, _, code := familiar(t, "version", "--json")
	var v struct {
		Version         string `json:"version"`
		ProtocolVersion int    `json:"protocolVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("version --json: %q, exit %d: %v", out, code, err)
	}
	if v.Version != version || v.ProtocolVersion != protocol.ProtocolVersion {
		t.Errorf("version --json = %+v, want %s and protocol %d", v, version, protocol.ProtocolVersion)
	}
	if out, _, _ := familiar(t, "version"); out != fmt.Sprintf("familiar %s (protocol %d)\n", version, protocol.ProtocolVersion) {
		t.Errorf("version = %q", out)
	}
	if _, stderr, code := familiar(t, "version", "--yaml"); code != 2 || !strings.Contains(stderr, `"--yaml"`) {
		t.Errorf("version --yaml: exit %d, %q", code, stderr)
	}
}
