package agent_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
)

// BenchmarkDetectionLatency measures, with the real CLI, the time from the
// fake API finishing a tool_use response to familiar's permission Question
// event, per driver. Each iteration is one prompt → tool_use → question →
// deny → turn end; p50 and p95 are reported as custom metrics.
//
//	go test ./agent -run '^$' -bench DetectionLatency -benchtime 50x
func BenchmarkDetectionLatency(b *testing.B) {
	for _, driver := range []string{agent.DriverPTY, agent.DriverStream} {
		b.Run(driver, func(b *testing.B) { benchLatency(b, driver) })
	}
}

func benchLatency(b *testing.B, driver string) {
	h := startWith(b, driver, "hello", nil)
	var (
		mu     sync.Mutex
		doneAt time.Time
	)
	h.api.OnResponseDone(func(req fakeapi.Request, reply fakeapi.Reply) {
		if len(reply.ToolUses) > 0 {
			mu.Lock()
			doneAt = time.Now()
			mu.Unlock()
		}
	})
	_, next := h.rec.wait(b, 0, "first turn end", turnEnded)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prompt := fmt.Sprintf("n%d\n@@TOOL Bash {\"command\":\"touch bench-%d.txt\"}\n@@TEXT ok", i, i)
		if err := h.sess.SendPrompt(prompt); err != nil {
			b.Fatal(err)
		}
		var ev agent.Event
		ev, next = h.rec.wait(b, next, "permission question", isQuestion(agent.KindPermission))
		mu.Lock()
		lat = append(lat, ev.At.Sub(doneAt))
		mu.Unlock()
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionDeny}); err != nil {
			b.Fatal(err)
		}
		_, next = h.rec.wait(b, next, "turn end", turnEnded)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
}
