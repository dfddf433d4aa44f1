// OutputPump feeds a task's terminal from its raw output log. task/output
// notifications carry no offsets, so they only wake the pump; the bytes
// come from task/output by offset, which makes the replay-then-stream
// seamless (no gap, no duplicate) and coalesces naturally: however many
// notifications arrive, there is at most one request in flight, at most one
// write per interval, and a backlog larger than maxBacklog is skipped (the
// TUI repaints itself), so a flooding task cannot drown the window.

import type { OutputPage } from './protocol';

export interface PumpOptions {
  /** Minimum time between two writes to the terminal. */
  minIntervalMs?: number;
  /** Bytes asked per request. */
  pageBytes?: number;
  /** When more than this is unread, jump ahead to the last keepBytes. */
  maxBacklog?: number;
  keepBytes?: number;
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
  /** Empty reads since the last wake or data: retries back off, then stop. */
  private empties = 0;
  private timer?: NodeJS.Timeout;
  private readonly o: Required<Omit<PumpOptions, 'onError'>> & Pick<PumpOptions, 'onError'>;

  constructor(
    private readonly fetch: (offset: number, limit: number) => Promise<OutputPage>,
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
      keepBytes: opts.keepBytes ?? 32 * 1024,
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

  private async loop() {
    this.running = true;
    try {
      while (this.wanted && !this.disposed) {
        this.wanted = false;
        let page: OutputPage;
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
          const to = page.size - this.o.keepBytes;
          this.skipped += to - this.offset;
          this.offset = to;
          this.wanted = true;
          continue;
        }
        if (page.data.length > 0) {
          this.empties = 0;
          const wait = this.lastWrite + this.o.minIntervalMs - Date.now();
          if (wait > 0) await sleep(wait);
          if (this.disposed) return;
          this.write(page.data);
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
