package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func BenchmarkProbe(b *testing.B) {
	for _, dirBase := range []string{"", "/dev/shm"} {
		for _, par := range []int{1, 8, 32, 128} {
			for _, tasks := range []int64{1, 16} {
				b.Run(fmt.Sprintf("shm=%v/par=%d/tasks=%d", dirBase != "", par, tasks), func(b *testing.B) {
					dir := b.TempDir()
					if dirBase != "" {
						dir, _ = os.MkdirTemp(dirBase, "probe")
						defer os.RemoveAll(dir)
					}
					s, err := Open(filepath.Join(dir, FileName), Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					var task atomic.Int64
					b.SetParallelism(par)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						id := fmt.Sprintf("task-%d", task.Add(1)%tasks)
						for pb.Next() {
							if _, err := s.AppendEvent(context.Background(), id, "task/updated", benchData); err != nil {
								b.Error(err)
								return
							}
						}
					})
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/event")
					b.ReportMetric(float64(b.N)/float64(s.commits.Load()), "events/commit")
				})
			}
		}
	}
}
