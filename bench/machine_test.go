package bench

import (
	"encoding/binary"
	"testing"
)

// macOS's struct loadavg as sysctl vm.loadavg returns it on arm64 and
// amd64: fixpt_t ldavg[3], 4 bytes of padding, long fscale (FSCALE 2048).
func TestParseLoadavg(t *testing.T) {
	b := make([]byte, 24)
	for i, v := range []uint32{2048 * 3 / 2, 2048, 512} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	binary.LittleEndian.PutUint64(b[16:], 2048)
	if got, ok := parseLoadavg(b); !ok || got != [3]float64{1.5, 1, 0.25} {
		t.Errorf("parseLoadavg = %v, %v", got, ok)
	}
	if _, ok := parseLoadavg(b[:12]); ok {
		t.Error("a short record parsed")
	}
}
