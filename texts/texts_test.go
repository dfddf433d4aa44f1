package texts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAll pages through ref with the given page size.
func readAll(t *testing.T, s *Store, ref string, limit int) string {
	t.Helper()
	var b strings.Builder
	var off int64
	for i := 0; ; i++ {
		p, err := s.Read(ref, off, limit)
		if err != nil {
			t.Fatal(err)
		}
		if p.Offset != off || (p.More && p.NextOffset <= off) {
			t.Fatalf("page %d: %+v", i, p)
		}
		b.WriteString(p.Data)
		off = p.NextOffset
		if !p.More {
			return b.String()
		}
	}
}

func TestClipKeepsTheWhole(t *testing.T) {
	s := New(t.TempDir(), t.TempDir())
	text := strings.Repeat("héllo wörld ✓ ", 20000) // multi-byte characters across every page edge
	clipped, ref, err := s.Clip(text, 30<<10)
	if err != nil {
		t.Fatal(err)
	}
	if ref == "" || len(clipped) > 30<<10 || !strings.HasPrefix(text, clipped) {
		t.Fatalf("clip: %d bytes, ref %q", len(clipped), ref)
	}
	for _, limit := range []int{1021, 4096, 1 << 20} {
		if got := readAll(t, s, ref, limit); got != text {
			t.Fatalf("limit %d: read back %d bytes, want %d", limit, len(got), len(text))
		}
	}
	// The same text again is the same reference; a short text is not stored.
	if _, again, _ := s.Clip(text, 30<<10); again != ref {
		t.Errorf("second clip ref %q, want %q", again, ref)
	}
	if short, none, _ := s.Clip("short", 30<<10); none != "" || short != "short" {
		t.Errorf("short text clipped: %q %q", short, none)
	}
	if _, err := s.Read(ref, int64(len(text))+1, 10); !errors.Is(err, ErrBadRange) {
		t.Errorf("offset past the end: %v", err)
	}
}

func TestReferencesStayInside(t *testing.T) {
	s := New(t.TempDir(), t.TempDir())
	for _, ref := range []string{"", "/etc/passwd", "clip/../../x", "clip/abc", "tool-results/../../.claude.json", "tool-results/a/b.txt", "tool-results/x.json"} {
		if _, err := s.Read(ref, 0, 10); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("Read(%q) = %v, want ErrInvalidRef", ref, err)
		}
	}
	if _, err := s.Read("clip/0123456789abcdef01234567", 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown clip: %v", err)
	}
}

func TestToolResults(t *testing.T) {
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "projects", "-tmp-repo", "08b1893e-ae1a", "tool-results")
	os.MkdirAll(dir, 0o700)
	whole := strings.Repeat("a", 200000) + "END\n"
	os.WriteFile(filepath.Join(dir, "b47jtqdpb.txt"), []byte(whole), 0o600)
	// As claude 2.1.330 wrote it to the model.
	preview := "<persisted-output>\nOutput too large (195.3KB). Full output saved to: " + filepath.Join(dir, "b47jtqdpb.txt") + "\n\nPreview (first 2KB):\naaaa"
	ref := ToolResultRef(preview)
	if ref != "tool-results/b47jtqdpb.txt" {
		t.Fatalf("ref = %q", ref)
	}
	s := New(t.TempDir(), cfg)
	if got := readAll(t, s, ref, 64<<10); got != whole {
		t.Fatalf("read %d bytes, want %d", len(got), len(whole))
	}
	if ToolResultRef("plain output mentioning tool-results/x.txt") != "" {
		t.Error("a whole result got a reference")
	}
}
