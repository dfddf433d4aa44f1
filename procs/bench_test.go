package procs

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkFanOut measures output throughput through the fan-out alone: log
// file, tail and two subscribers draining as fast as they can.
func BenchmarkFanOut(b *testing.B) {
	log, err := os.OpenFile(filepath.Join(b.TempDir(), "out.log"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	o := newOutput("bench", DefaultTailBytes, log, "out.log", nil, nil, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	for range 2 {
		s := o.Subscribe(SubscribeOptions{})
		wg.Go(func() {
			for {
				if _, err := s.Next(context.Background()); err == io.EOF {
					return
				}
			}
		})
	}
	chunk := patternAt(0, readBufSize)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		o.write(chunk)
	}
	o.finish()
	wg.Wait()
}

// BenchmarkPTY measures bytes/s from a child through a PTY into the fan-out.
func BenchmarkPTY(b *testing.B) {
	const size = 32 << 20
	b.SetBytes(size)
	for b.Loop() {
		p, err := Start(helperConfig(Config{LogPath: filepath.Join(b.TempDir(), "out.log")}, "write", itoa(size)))
		if err != nil {
			b.Fatal(err)
		}
		<-p.Output().Done()
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
		if p.Output().Size() != size {
			b.Fatalf("got %d bytes", p.Output().Size())
		}
	}
}

// BenchmarkTerminateSetsidTree measures Terminate of a tree whose members all
// exit on SIGTERM — one in the child's group, one that called setsid, one
// that called setsid and was orphaned — from the call to the last process
// gone: Terminate returns once the process table has none of them. Run it
// with -tags portableprocs for the way macOS does it (no subreaper, no
// pidfds: the orphan is found by its TreeEnv token in the table).
func BenchmarkTerminateSetsidTree(b *testing.B) {
	b.StopTimer()
	for range b.N { // not b.Loop: the timer runs only around Terminate
		p, err := Start(helperConfig(Config{}, "setsid-tree"))
		if err != nil {
			b.Fatal(err)
		}
		waitOutput(b, p.Output(), "tree ready")
		sleepers(b, p.Output(), 3)
		b.StartTimer()
		if err := p.Terminate(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if left := helperProcs(); len(left) > 0 {
			b.Fatalf("left after Terminate: %v", left)
		}
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
