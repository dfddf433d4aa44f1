#!/bin/sh
# Stands in for claude in the UI load test (never in functional tests): the
# first agent started after $FLOOD_DIR/on exists floods its terminal at about
# 20 MB/s; every other agent is internal/fakeagent drawing an idle TUI.
for a in "$@"; do
	if [ "$a" = "--version" ] || [ "$a" = "-v" ]; then
		echo "2.1.330 (Claude Code)"
		exit 0
	fi
done
if [ -e "$FLOOD_DIR/on" ] && mkdir "$FLOOD_DIR/flooder" 2>/dev/null; then
	exec python3 -c '
import os, sys, time
line = b"".join(b"flood %07d the quick brown fox jumps over the lazy dog 0123456789\r\n" % i for i in range(2700))
chunk, period = line, len(line) / 20e6  # ~200 KB every ~10 ms: 20 MB/s
out = sys.stdout.buffer
next_at = time.monotonic()
while True:
    out.write(chunk); out.flush()
    next_at += period
    d = next_at - time.monotonic()
    if d > 0: time.sleep(d)
'
fi
FAKEAGENT_MODE=idle exec "$FAKEAGENT" "$@"
