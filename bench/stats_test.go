package bench

import (
	"strings"
	"testing"
	"time"
)

func TestDistOf(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := distOf(ds)
	want := Dist{N: 100, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}
	if d != want {
		t.Errorf("distOf = %+v, want %+v", d, want)
	}
	if (distOf(nil) != Dist{}) {
		t.Errorf("distOf(nil) = %+v", distOf(nil))
	}
}

// The tables are Markdown with one row per result, whatever ran.
func TestMarkdown(t *testing.T) {
	rep := &Report{
		Options:    ReportOptions{WindowSec: 10, FloodMiB: 200},
		Detection:  []DetectionResult{{Driver: "pty", Latency: Dist{N: 50, P50: 61.5}}},
		Overhead:   []OverheadResult{{Kind: KindFake, Sessions: 0}, {Kind: KindFake, Sessions: 10, CPUPercent: 5.4}},
		Throughput: []ThroughputResult{{Path: PathAgent, Lines: "plain", MB: 212.8, MBps: 39.6, LastLine: "0003 end"}},
		TaskStart:  &TaskStartResult{Files: 10000},
		Scale:      &ScaleResult{Running: 10, Queued: 50, TaskList: Dist{N: 3, P99: 41.27}},
	}
	md := Markdown(rep)
	for _, want := range []string{
		"| pty ", "| 61.5 ", "| 0 fake ", "(baseline)", "| 10 fake ", "| 5.4 ",
		"| agent (procs + screen model + events) ", "`0003 end`",
		"10000-file repository", "10 running + 50 queued", "| 41.27 ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(md), "\n") {
		if strings.HasPrefix(line, "|") && !strings.HasSuffix(line, "|") {
			t.Errorf("row does not end its table: %q", line)
		}
	}
}

// TestShuffledVariesWhoComesBefore: each round's order is a permutation of
// the systems, the same on a rerun, and over the rounds of a run each
// system follows several others, so what one leaves behind after its turn
// does not always land on the same neighbour.
func TestShuffledVariesWhoComesBefore(t *testing.T) {
	systems := []string{"pty", "stream", "floor", "acp", "old acp", "tui", "tui all", "tui http", "tui pre"}
	before := map[string]map[string]bool{}
	for i := range 22 {
		order := shuffled(systems, i)
		if strings.Join(order, ",") != strings.Join(shuffled(systems, i), ",") {
			t.Fatalf("round %d: two orders", i)
		}
		seen := map[string]bool{}
		for k, s := range order {
			seen[s] = true
			if k > 0 {
				if before[s] == nil {
					before[s] = map[string]bool{}
				}
				before[s][order[k-1]] = true
			}
		}
		if len(seen) != len(systems) || len(order) != len(systems) {
			t.Fatalf("round %d: %v is not a permutation", i, order)
		}
	}
	for _, s := range systems {
		if len(before[s]) < 4 {
			t.Errorf("%s followed only %d systems in 22 rounds: %v", s, len(before[s]), before[s])
		}
	}
	if got := systems[0]; got != "pty" {
		t.Errorf("shuffled changed its argument: %v", systems)
	}
}

func TestRoundRatioPairsEachRound(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	// The machine got slower halfway: the p50s are far apart (1000 vs
	// 1500) but each round's pair is 1.1× the floor.
	a := ms(1100, 1100, 1100, 2200, 2200)
	b := ms(1000, 1000, 1000, 2000, 2000)
	r := roundRatio("floor", a, b)
	if r == nil || r.N != 5 || r.P50 != 1.1 || r.P95 != 1.1 || r.Against != "floor" {
		t.Fatalf("roundRatio = %+v, want 1.1× over 5 rounds", r)
	}
	if r := roundRatio("floor", ms(100, 300), ms(100)); r.N != 1 || r.P50 != 1 {
		t.Fatalf("unequal lengths pair only the rounds both have: %+v", r)
	}
	if roundRatio("floor", nil, ms(1)) != nil || roundRatio("floor", ms(1), ms(0)) != nil {
		t.Fatal("no pair (or a zero floor) gives no ratio")
	}
}
