// OutputPump feeds a task's terminal from its raw output log. task/output
// notifications carry no offsets, so they only wake the pump; the bytes
// come from task/output by offset, which makes the replay-then-stream
// seamless (no gap, no duplicate) and coalesces naturally: however many
// notifications arrive, there is at most one request in flight, at most one
// write per interval, and a backlog larger than maxBacklog is skipped (the
// TUI repaints itself), so a flooding task cannot drown the window. Once it
// had to skip, the pump is in flood mode for a while: a few frames a second
// of the latest output only (drop-to-latest), because every byte written
// costs the extension host, code-server and the renderer (xterm.js) on the
// same cores that must answer a click in the tree.

import type { TaskOutputResult } from './protocol';

export interface PumpOptions {
  /** Minimum time between two writes to the terminal. */
  minIntervalMs?: number;
  /** Bytes asked per request. */
  pageBytes?: number;
  /** When more than this is unread, jump ahead to the last floodKeepBytes (flood mode). */
  maxBacklog?: number;
  /** In flood mode: time between writes, bytes kept of the tail, and how long it lasts after the last skip. */
  floodIntervalMs?: number;
  floodKeepBytes?: number;
  floodHoldMs?: number;
  /** Retries after a wake that found nothing new (the log lags the notification). */
  emptyRetries?: number;
  onError?: (err: Error) => void;
}

export class OutputPump {
  offset = 0;
  /** Bytes skipped under flood (a counter for tests and logs). */
  skipped = 0;
  private running = false;
  private wanted = false;
  private disposed = false;
  private lastWrite = 0;
  /** Flood mode lasts until then (ms since the epoch). */
  private floodUntil = 0;
  /** The next write starts after a skip: from its first line break on. */
  private afterSkip = false;
  /** Empty reads since the last wake or data: retries back off, then stop. */
  private empties = 0;
  private timer?: NodeJS.Timeout;
  private readonly o: Required<Omit<PumpOptions, 'onError'>> & Pick<PumpOptions, 'onError'>;

  constructor(
    private readonly fetch: (offset: number, limit: number) => Promise<TaskOutputResult>,
    private readonly write: (data: string) => void,
    opts: PumpOptions = {},
  ) {
    this.o = {
      // At most ~1 MB/s reaches the terminal: a Pseudoterminal has no flow
      // control, and the workbench's renderer (xterm.js) falls behind well
      // before 20 MB/s, freezing the whole window. An agent's TUI writes a
      // few KB/s, far below this.
      minIntervalMs: opts.minIntervalMs ?? 32,
      pageBytes: opts.pageBytes ?? 32 * 1024,
      maxBacklog: opts.maxBacklog ?? 256 * 1024,
      // A flood (a build log, `yes`, a test's 20 MB/s) shows as ~4 frames a
      // second of its last 16 KB: ~64 KB/s instead of 1 MB/s.
      floodIntervalMs: opts.floodIntervalMs ?? 250,
      floodKeepBytes: opts.floodKeepBytes ?? 16 * 1024,
      floodHoldMs: opts.floodHoldMs ?? 2000,
      // 20, 40, 80, 160, 320 ms: the masking writers of the log and of the
      // notifications let a held-back tail go on timers of their own.
      emptyRetries: opts.emptyRetries ?? 5,
      onError: opts.onError,
    };
  }

  /** Asks for whatever is new; cheap to call on every notification. */
  wake() {
    if (this.disposed) return;
    this.wanted = true;
    this.empties = 0;
    if (!this.running && !this.timer) void this.loop();
  }

  dispose() {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Resolves once the pump has nothing left to read (for tests). */
  async idle(): Promise<void> {
    while (!this.disposed && (this.running || this.wanted || this.timer)) await new Promise((r) => setTimeout(r, 5));
  }

  private flooded(): boolean {
    return Date.now() < this.floodUntil;
  }

  private async loop() {
    this.running = true;
    try {
      while (this.wanted && !this.disposed) {
        if (this.flooded()) {
          // Wait before reading, not after: what is written is the latest.
          const wait = this.lastWrite + this.o.floodIntervalMs - Date.now();
          if (wait > 0) await sleep(wait);
          if (this.disposed) return;
        }
        this.wanted = false;
        let page: TaskOutputResult;
        try {
          page = await this.fetch(this.offset, this.o.pageBytes);
        } catch (err: any) {
          if (err?.code === -32602 && /offset/.test(String(err?.data?.field ?? err?.message))) {
            // A new log (the agent restarted): start over.
            this.offset = 0;
            this.write('\x1b[2J\x1b[H');
            this.wanted = true;
            continue;
          }
          this.o.onError?.(err);
          return;
        }
        if (this.disposed) return;
        if (page.size < this.offset) {
          this.offset = 0;
          this.write('\x1b[2J\x1b[H');
          this.wanted = true;
          continue;
        }
        const backlog = page.size - page.nextOffset;
        if (backlog > this.o.maxBacklog) {
          // Too far behind: skip to the tail; the TUI's next repaint fixes the screen.
          this.floodUntil = Date.now() + this.o.floodHoldMs;
          const to = page.size - this.o.floodKeepBytes;
          this.afterSkip = true;
          this.skipped += to - this.offset;
          this.offset = to;
          this.wanted = true;
          continue;
        }
        if (page.data.length > 0) {
          this.empties = 0;
          const wait = this.lastWrite + (this.flooded() ? this.o.floodIntervalMs : this.o.minIntervalMs) - Date.now();
          if (wait > 0) await sleep(wait);
          if (this.disposed) return;
          let data = page.data;
          if (this.afterSkip) {
            // Not in the middle of a line (or of an escape sequence).
            this.afterSkip = false;
            const nl = data.indexOf('\n');
            if (nl >= 0 && nl < data.length - 1) data = data.slice(nl + 1);
          }
          this.write(data);
          this.lastWrite = Date.now();
          this.offset = page.nextOffset;
          if (page.nextOffset < page.size) this.wanted = true;
        } else if (!page.ended && this.empties < this.o.emptyRetries) {
          // The notification can precede the log write by a moment (never
          // once the log has ended: nothing more will come).
          this.empties++;
          this.running = false;
          this.timer = setTimeout(() => {
            this.timer = undefined;
            this.wanted = true;
            if (!this.running) void this.loop();
          }, 10 * 2 ** this.empties);
          return;
        }
      }
    } finally {
      this.running = false;
    }
  }
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
