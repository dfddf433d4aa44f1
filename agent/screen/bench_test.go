package screen_test

import (
	"io"
	"testing"

	"github.com/familiar-dev/familiar/agent/screen"
)

// tuiStream is the output of every recorded session of the newest CLI
// version, back to back: real fullscreen frames, spinner updates, titles.
func tuiStream(b *testing.B) []byte {
	b.Helper()
	versions := recordedVersions(b)
	version := versions[len(versions)-1]
	var stream []byte
	for _, tt := range recordedScreens {
		rec := loadRecording(b, version, tt.name)
		if rec.RawPath != "" {
			stream = append(stream, readRaw(b, rec)...)
		}
	}
	if len(stream) == 0 {
		b.Skip("no raw streams recorded")
	}
	return stream
}

// BenchmarkWrite measures how fast the screen model takes PTY output, in
// the 4 KiB reads a PTY typically gives.
func BenchmarkWrite(b *testing.B) {
	stream := tuiStream(b)
	s := screen.New(120, 40, io.Discard)
	defer s.Close()
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for b.Loop() {
		for p := stream; len(p) > 0; {
			n := min(4096, len(p))
			if _, err := s.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
	}
}

// BenchmarkSnapshotClassify measures one look at the screen, which the
// driver does after output arrives.
func BenchmarkSnapshotClassify(b *testing.B) {
	stream := tuiStream(b)
	s := screen.New(120, 40, io.Discard)
	defer s.Close()
	s.Write(stream)
	for b.Loop() {
		_ = screen.Classify(s.Snapshot())
	}
}

// BenchmarkOSCFilter measures the filter alone: its share of Write.
func BenchmarkOSCFilter(b *testing.B) {
	stream := tuiStream(b)
	f := screen.NewOSCFilter(io.Discard)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		for p := stream; len(p) > 0; {
			n := min(4096, len(p))
			f.Write(p[:n])
			p = p[n:]
		}
	}
}
