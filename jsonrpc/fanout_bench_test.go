package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/textproto"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFanout5 sends notifications to 5 socket clients and reports how
// long until every client has read each one (ns/op is per notification, all
// 5 clients included) and notifications/s.
func BenchmarkFanout5(b *testing.B) {
	const clients = 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	hub := NewHub(log, 0)
	srv := NewServer(newFakeServer(), hub, log)
	sock := filepath.Join(b.TempDir(), "f.sock")
	l, err := srv.Listen(ctx, "unix:"+sock)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	counts := make(chan int, clients)
	var conns []net.Conn
	for i := 0; i < clients; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/r"}}`
		fmt.Fprintf(c, "Content-Length: %d\r\n\r\n%s", len(body), body)
		go readFrames(c, b.N, counts)
	}
	for hub.Clients() < clients {
		time.Sleep(time.Millisecond) // subscription happens after initialize; nothing to wait on
	}
	params := json.RawMessage(`{"seq":1,"id":"t1","data":"some terminal output of a typical size for one coalesced chunk"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hub.Notify("task/output", params)
	}
	for i := 0; i < clients; i++ {
		<-counts
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	for _, c := range conns {
		c.Close()
	}
}

// readFrames reads the initialize response and n notifications.
func readFrames(c net.Conn, n int, done chan<- int) {
	br := bufio.NewReader(c)
	tp := textproto.NewReader(br)
	got := 0
	for got < n+1 {
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			break
		}
		size, _ := strconv.Atoi(h.Get("Content-Length"))
		if _, err := io.CopyN(io.Discard, br, int64(size)); err != nil {
			break
		}
		got++
	}
	done <- got
}
