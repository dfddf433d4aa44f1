package bench

import (
	"math"
	"slices"
	"time"
)

// Dist summarizes a set of durations, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50Ms"`
	P95  float64 `json:"p95Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
	Mean float64 `json:"meanMs"`
}

func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Dist{
		N:    len(s),
		P50:  ms(percentile(s, 0.50)),
		P95:  ms(percentile(s, 0.95)),
		P99:  ms(percentile(s, 0.99)),
		Max:  ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s))),
	}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

// round keeps three significant decimals, enough for the tables and JSON.
func round(f float64) float64 { return math.Round(f*1000) / 1000 }
