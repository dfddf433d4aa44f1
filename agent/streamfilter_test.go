package agent

import (
	"bytes"
	"strings"
	"testing"
)

// stream_event lines go, every other line stays whole, however the output
// is cut into writes.
func TestLineDropperDropsStreamEvents(t *testing.T) {
	in := `{"type":"system","subtype":"init"}` + "\n" +
		`{"type":"stream_event","event":{"delta":{"text":"sk-ant-api03-Zq7"}}}` + "\n" +
		"{}\n" +
		`{"type":"stream_event","event":{"delta":{"text":"Xw2"}}}` + "\n" +
		`{"type":"assistant","message":{"content":[{"type":"text","text":"sk-ant-api03-Zq7Xw2"}]}}` + "\n" +
		`{"type":"stream`
	want := `{"type":"system","subtype":"init"}` + "\n" + "{}\n" +
		`{"type":"assistant","message":{"content":[{"type":"text","text":"sk-ant-api03-Zq7Xw2"}]}}` + "\n" + `{"type":"stream`
	for _, size := range []int{1, 2, 5, 7, 22, 23, 64, len(in)} {
		var out bytes.Buffer
		d := &lineDropper{w: &out, closeW: true}
		for s := in; s != ""; {
			k := min(size, len(s))
			if n, err := d.Write([]byte(s[:k])); n != k || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			s = s[k:]
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("writes of %d: got\n%s\nwant\n%s", size, out.String(), want)
		}
		if strings.Contains(out.String(), "Xw2\"}}") {
			t.Errorf("writes of %d: a delta got through", size)
		}
	}
}
