package procs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"unicode/utf8"
)

func TestCompleteUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a€", 4},
		{"a\xe2", 1},         // lead byte of 3
		{"a\xe2\x82", 1},     // 2 of 3
		{"a\xf0\x9f\x98", 1}, // 3 of 4
		{"\xf0\x9f\x98\x80", 4},
		{"a\xff", 2},         // invalid: passes now
		{"a\xe2x", 3},        // broken sequence: passes
		{"a\x82\x82\x82", 4}, // stray continuation bytes pass
		{"a\xf0\x82", 3},     // not a valid prefix (F0 needs 90..BF next)
		{"a\xed\xa0", 3},     // surrogate prefix: never valid
	} {
		if got := completeUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("completeUTF8(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestRing(t *testing.T) {
	r := ring{buf: make([]byte, 5)}
	var all []byte
	for _, s := range []string{"ab", "cde", "f", "ghijklm", "", "n"} {
		r.write([]byte(s))
		all = append(all, s...)
		for k := 0; k <= 6; k++ {
			want := all[len(all)-min(k, len(all), 5):]
			if got := r.last(k); !bytes.Equal(got, want) {
				t.Fatalf("after %q: last(%d) = %q, want %q", all, k, got, want)
			}
		}
	}
}

func newTestOutput(tail int) *Output {
	return newOutput("test", tail, nil, "", nil, nil, slog.New(slog.DiscardHandler))
}

func next(t *testing.T, s *Subscription) Chunk {
	t.Helper()
	c, err := s.Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return c
}

func TestSubscriptionOverflow(t *testing.T) {
	o := newTestOutput(64)
	s := o.Subscribe(SubscribeOptions{MaxQueued: 10})
	o.write([]byte("12345"))
	o.write([]byte("67890"))
	o.write([]byte("abc")) // full: dropped
	o.write([]byte("d"))   // dropped too: still overflowing until Next
	if c := next(t, s); string(c.Data) != "1234567890" || c.Offset != 0 || c.Dropped != 0 {
		t.Fatalf("chunk = %+v", c)
	}
	o.write([]byte("ef"))
	if c := next(t, s); string(c.Data) != "ef" || c.Offset != 14 || c.Dropped != 4 {
		t.Fatalf("chunk after gap = %+v %q", c, c.Data)
	}
	// A single read larger than MaxQueued is accepted into an empty queue.
	big := bytes.Repeat([]byte("x"), 25)
	o.write(big)
	if c := next(t, s); len(c.Data) != 25 || c.Offset != 16 || c.Dropped != 0 {
		t.Fatalf("big chunk = %+v", c)
	}
	// A gap at the end is reported before EOF.
	o.write(big)
	o.write([]byte("lost"))
	o.finish()
	if c := next(t, s); len(c.Data) != 25 || c.Offset != 41 {
		t.Fatalf("chunk = %+v", c)
	}
	if c := next(t, s); len(c.Data) != 0 || c.Offset != 70 || c.Dropped != 4 {
		t.Fatalf("trailing gap = %+v", c)
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next at end = %v, want EOF", err)
	}
	if s.Dropped() != 8 {
		t.Errorf("Dropped() = %d, want 8", s.Dropped())
	}
	// Subscribing after the end: the replay, then EOF.
	late := o.Subscribe(SubscribeOptions{Replay: true})
	if c := next(t, late); c.Offset != 70-64 || len(c.Data) != 64 {
		t.Errorf("late replay = %+v", c)
	}
	if _, err := late.Next(context.Background()); err != io.EOF {
		t.Errorf("late Next = %v, want EOF", err)
	}
}

func TestSubscriptionUTF8(t *testing.T) {
	o := newTestOutput(7)
	s := o.Subscribe(SubscribeOptions{})
	o.write([]byte("a\xe2"))
	if c := next(t, s); string(c.Data) != "a" {
		t.Fatalf("chunk = %q", c.Data)
	}
	if got := o.Tail(); string(got.Data) != "a" {
		t.Errorf("Tail = %q, want the complete part only", got.Data)
	}
	if o.Size() != 2 {
		t.Errorf("Size = %d, want 2", o.Size())
	}
	o.write([]byte("\x82"))
	o.write([]byte("\xac\xf0\x9f"))
	if c := next(t, s); string(c.Data) != "€" || c.Offset != 1 {
		t.Fatalf("chunk = %+v %q", c, c.Data)
	}
	o.write([]byte("\x98\x80"))
	if c := next(t, s); string(c.Data) != "😀" || c.Offset != 4 {
		t.Fatalf("chunk = %+v %q", c, c.Data)
	}
	// The ring holds 7 bytes, "€😀b" minus the first two bytes of "€": the
	// tail starts at the next character.
	o.write([]byte("b"))
	if got := o.Tail(); string(got.Data) != "😀b" || got.Offset != 4 {
		t.Errorf("Tail = %+v %q", got, got.Data)
	}
	// Replay is cut at the same boundaries.
	r := o.Subscribe(SubscribeOptions{Replay: true, MaxQueued: 2})
	if c := next(t, r); string(c.Data) != "b" || c.Offset != 8 {
		t.Errorf("replay = %+v %q", c, c.Data)
	}
	// An incomplete sequence at the end is delivered at EOF.
	o.write([]byte("\xe2\x82"))
	o.finish()
	var rest []byte
	for {
		c, err := s.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, c.Data...)
	}
	if string(rest) != "b\xe2\x82" {
		t.Errorf("rest = %q", rest)
	}
	if !utf8.ValidString("😀b") {
		t.Fatal("test data")
	}
}

func TestSubscriptionClose(t *testing.T) {
	o := newTestOutput(8)
	s := o.Subscribe(SubscribeOptions{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Next(context.Background())
		done <- err
	}()
	s.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close = %v", err)
	}
	o.write([]byte("x")) // no longer queued anywhere
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2 := o.Subscribe(SubscribeOptions{})
	if _, err := s2.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a done ctx = %v", err)
	}
}
