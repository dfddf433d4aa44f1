package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/protocol"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestGenerated fails when a generated file is not what protocol.Server
// gives: a method added, removed or changed without regenerating.
func TestGenerated(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("Generate wrote %d files, want 4", len(files))
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(root(), f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.Src) {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(string(f.Src), "\n")
			line := 0
			for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
				line++
			}
			t.Errorf("%s is stale (first difference at line %d); run: go generate ./protocol/...", f.Path, line+1)
		}
	}
}

// TestEveryMethodIsGenerated: each of the four files has each method of
// protocol.Server once (the forwarders less those workspace writes by hand),
// and the interface read from the source is the one reflection sees.
func TestEveryMethodIsGenerated(t *testing.T) {
	ms, err := serverMethods(filepath.Join(root(), "protocol"))
	if err != nil {
		t.Fatal(err)
	}
	iface := reflect.TypeFor[protocol.Server]()
	if len(ms) != iface.NumMethod() {
		t.Fatalf("read %d methods of protocol.Server from its source, reflection sees %d", len(ms), iface.NumMethod())
	}
	for _, m := range ms {
		if _, ok := iface.MethodByName(m.Name); !ok {
			t.Errorf("read protocol.Server.%s from the source; reflection does not see it", m.Name)
		}
	}
	own, err := handWritten(filepath.Join(root(), "workspace"), "Service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Initialize", "Shutdown", "SettingsUpdate", "ServerStop"} {
		if !own[want] {
			t.Errorf("workspace.Service.%s is not found written by hand", want)
		}
	}
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src := string(f.Src)
		for _, m := range ms {
			var want string
			switch f.Path {
			case "jsonrpc/table_gen.go":
				want = "(protocol.Server." + m.Name + "),"
			case "workspace/service_gen.go":
				if own[m.Name] {
					if strings.Contains(src, ") "+m.Name+"(") {
						t.Errorf("%s forwards %s, which workspace writes by hand", f.Path, m.Name)
					}
					continue
				}
				want = ") " + m.Name + "(ctx context.Context"
			case "rpcclient/methods_gen.go":
				want = "protocol.Method" + m.Name + ","
			case "internal/fakeserver/unimplemented_gen.go":
				want = "NotImplemented(\"" + m.Name + "\")"
			}
			if n := strings.Count(src, want); n != 1 {
				t.Errorf("%s has %q %d times, want once", f.Path, want, n)
			}
		}
	}
}
