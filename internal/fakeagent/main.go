// Command fakeagent stands in for the claude CLI in familiar's benchmarks. It
// runs under the PTY that familiar gives claude and draws screens shaped like
// Claude Code's fullscreen TUI (2.1.330): the alternate screen, the banner, a
// spinner line ("✻ Ruminating…"), the prompt box between ─ rules and the footer
// with "esc to interrupt", with the spinner redrawn a few times per second
// the way the CLI redraws it (cursor moves and one changed line). It costs
// familiar what an agent's screen costs, without the CPU and memory of the
// real CLI.
//
// It ignores its arguments (familiar passes claude's flags) except
// --version, which it answers as claude 2.1.330 does. What it does is set by
// the environment:
//
//	FAKEAGENT_MODE   idle (default): draw the screen and update the spinner;
//	                 flood: write FAKEAGENT_BYTES bytes of text lines, then exit
//	FAKEAGENT_FPS    spinner updates per second in idle mode (default 4)
//	FAKEAGENT_STAMP  1: the spinner line carries the wall-clock time of its
//	                 write ("t=<unix ns>"), for measuring notification lag
//	FAKEAGENT_TAIL   text drawn in the prompt box at the end of each idle
//	                 frame, after the cursor is parked there: what a secret's
//	                 first characters being typed look like (the masker holds
//	                 them back until the frame after, or its quiet deadline)
//	FAKEAGENT_BYTES  bytes to write in flood mode (default 200 MB)
//	FAKEAGENT_COLOR  1: flood lines carry SGR colour sequences
//
// It exits on SIGTERM, SIGHUP (its terminal closed) and SIGINT, like the CLI.
// It is for benchmarks and tests only and never talks to the network.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Version is what --version prints: the CLI version familiar's screen
// patterns were recorded from.
const Version = "2.1.330 (Claude Code)"

func main() {
	for _, a := range os.Args[1:] {
		if a == "--version" || a == "-v" {
			fmt.Println(Version)
			return
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()
	switch mode := os.Getenv("FAKEAGENT_MODE"); mode {
	case "", "idle":
		idle(envInt("FAKEAGENT_FPS", 4), os.Getenv("FAKEAGENT_STAMP") == "1", os.Getenv("FAKEAGENT_TAIL"))
	case "flood":
		if err := flood(int64(envInt("FAKEAGENT_BYTES", 200<<20)), os.Getenv("FAKEAGENT_COLOR") == "1"); err != nil {
			fmt.Fprintln(os.Stderr, "fakeagent:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "fakeagent: unknown FAKEAGENT_MODE %q\n", mode)
		os.Exit(2)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// size is the terminal size, 120×40 when stdout is not a terminal.
func size() (cols, rows int) {
	cols, rows, err := term.GetSize(1)
	if err != nil || cols < 40 || rows < 12 {
		return 120, 40
	}
	return cols, rows
}

// idle draws the working screen and redraws the spinner line until killed.
func idle(fps int, stamp bool, tail string) {
	cols, rows := size()
	w := bufio.NewWriterSize(os.Stdout, 16<<10)
	rule := "\x1b[38;5;244m" + strings.Repeat("─", cols) + "\x1b[39m"
	// The frame, as the CLI draws it: alternate screen, absolute positions,
	// the prompt box and footer at the bottom.
	fmt.Fprint(w, "\x1b[?1049h\x1b[2J\x1b[H\x1b[?25l\x1b]0;✳ Claude Code\a")
	fmt.Fprint(w, "\x1b[2;1H \x1b[38;5;174m▐▛███▜▌\x1b[39m   \x1b[1mClaude Code\x1b[22m \x1b[38;5;246mv2.1.330\x1b[39m")
	fmt.Fprint(w, "\x1b[3;1H\x1b[38;5;174m▝▜█████▛▘\x1b[39m  \x1b[38;5;246mOpus 5.5 · API Usage Billing\x1b[39m")
	wd, _ := os.Getwd()
	fmt.Fprintf(w, "\x1b[4;1H  \x1b[38;5;174m▘▘ ▝▝\x1b[39m    \x1b[38;5;246m%s\x1b[39m", wd)
	fmt.Fprint(w, "\x1b[7;1H\x1b[48;5;237m❯ fake task: keep the spinner turning\x1b[49m")
	fmt.Fprintf(w, "\x1b[%d;%dH◐ medium · /effort", rows-4, cols-19)
	fmt.Fprintf(w, "\x1b[%d;1H%s", rows-3, rule)
	fmt.Fprintf(w, "\x1b[%d;1H❯\u00a0\x1b[7m \x1b[27m", rows-2)
	fmt.Fprintf(w, "\x1b[%d;1H%s", rows-1, rule)
	fmt.Fprintf(w, "\x1b[%d;1H  \x1b[38;5;246m⏸ manual mode on · esc to interrupt · ← for agents\x1b[39m", rows)
	w.Flush()

	glyphs := []string{"·", "✢", "✳", "✶", "✻", "✽"}
	titles := []string{"◐", "◓", "◑", "◒"}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(fps))
	defer tick.Stop()
	for i := 0; ; i++ {
		// One changed line and the title, between cursor moves, as the
		// CLI's differential renderer writes them.
		fmt.Fprintf(w, "\x1b]0;%s Claude Code\a", titles[i%len(titles)])
		fmt.Fprintf(w, "\x1b[%d;1H\x1b[38;5;174m%s\x1b[39m Ruminating… \x1b[38;5;246m(%ds · ↓ %d tokens)", rows-5, glyphs[i%len(glyphs)], int(time.Since(start).Seconds()), 40+i)
		if stamp {
			fmt.Fprintf(w, " t=%d", time.Now().UnixNano())
		}
		fmt.Fprintf(w, "\x1b[39m\x1b[K\x1b[%d;3H%s", rows-2, tail)
		if err := w.Flush(); err != nil {
			return // the terminal is gone
		}
		<-tick.C
	}
}

// flood writes n bytes of numbered text lines as fast as the terminal takes
// them. The terminal's output processing turns each LF into CR LF.
func flood(n int64, color bool) error {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	const filler = "the quick brown fox jumps over the lazy dog 0123456789"
	var line []byte
	for i, written := 0, int64(0); written < n; i++ {
		line = line[:0]
		if color {
			line = fmt.Appendf(line, "\x1b[32m%08d\x1b[0m %s \x1b[1mok\x1b[0m\n", i, filler)
		} else {
			line = fmt.Appendf(line, "%08d %s ok\n", i, filler)
		}
		if rest := n - written; int64(len(line)) > rest {
			line = append(line[:rest-1], '\n')
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		written += int64(len(line))
	}
	return w.Flush()
}
