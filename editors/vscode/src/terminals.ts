// The terminals of tasks: each a pseudoterminal fed by paging the task's output log.

import * as vscode from 'vscode';
import type { Host } from './host';
import { OutputPump } from './pump';
import { Code } from './protocol';
import { statusText, taskLabel, typed, withoutResumeHint } from './model';
import type { Status, Task } from './protocol';
import { Item, itemAsText, personWords } from './transcript';
import type { Feed } from './taskview';

export class Terminals implements vscode.Disposable {
  // pump: the output log's pager, or for a stream task the feed's subscription.
  private readonly terminals = new Map<string, { term: vscode.Terminal; pump: { dispose(): void; wake(): void } }>();
  private readonly sub: vscode.Disposable;

  /** feed: a task's conversation, as its task view reads it (a stream task's terminal shows it). */
  constructor(private readonly f: Host, private readonly feed: (id: string) => Feed) {
    this.sub = vscode.window.onDidCloseTerminal((t) => {
      for (const [id, v] of this.terminals) if (v.term === t) { v.pump.dispose(); this.terminals.delete(id); }
    });
  }

  dispose() {
    this.sub.dispose();
    for (const t of this.terminals.values()) t.pump.dispose();
  }

  /** Output may have been missed (a reconnect): every terminal pages on. */
  wakeAll() {
    for (const v of this.terminals.values()) v.pump.wake();
  }

  wake(id: string) {
    this.terminals.get(id)?.pump.wake();
  }


  openTerminal(id: string) {
    const existing = this.terminals.get(id);
    if (existing) {
      existing.term.show();
      return;
    }
    const client = this.f.connected();
    const t = this.f.task(id);
    if (t?.driver === 'stream') return this.openStream(id, t);
    const write = new vscode.EventEmitter<string>();
    const close = new vscode.EventEmitter<number | void>();
    const pump = new OutputPump((offset, limit) => client.output(id, offset, limit), (d) => write.fire(withoutResumeHint(d)), {
      onError: (err) => this.f.log.warn(`terminal of ${id}: ${err.message}`),
    });
    let said = false;
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      onDidClose: close.event,
      open: (dims) => {
        if (dims) void this.resize(id, dims);
        pump.wake();
      },
      close: () => pump.dispose(),
      handleInput: (data) => {
        // The terminal answers the escape sequences a task's log replays
        // (cursor position, device attributes, focus): those are not typing,
        // and sent to a finished task each drew "[familiar: cannot type …]".
        if (!typed(data)) return;
        const cur = this.f.task(id);
        if (cur && !live(cur.status)) {
          if (!said) write.fire(`\r\n\x1b[2m[familiar: the task is ${statusText(cur.status)}; nothing reads what is typed here]\x1b[0m\r\n`);
          said = true;
          return;
        }
        said = false;
        client.request('task/input', { id, data }).catch((err) => {
          // Typing into a task that ended meanwhile: say so once.
          if (err?.code === Code.FailedPrecondition && !said) write.fire(`\r\n\x1b[2m[familiar: ${err.message}]\x1b[0m\r\n`);
          said = true;
        });
      },
      setDimensions: (dims) => void this.resize(id, dims),
    };
    // Named by the task: several "Familiar: …" terminals cannot be told apart in the list.
    const term = vscode.window.createTerminal({ name: t ? taskLabel(t) : id, pty, iconPath: new vscode.ThemeIcon('hubot') });
    this.terminals.set(id, { term, pump });
    term.show();
  }

  /**
   * A stream-driver task's terminal: its raw output is stream-json, so the
   * terminal shows the conversation from task/transcript as text instead
   * (the task view's feed), and follows it: text as it streams, a line per
   * finished tool call, the plan when it changes.
   */
  private openStream(id: string, t: Task) {
    const write = new vscode.EventEmitter<string>();
    const written = new Map<string, number>();
    const wt = () => this.f.task(id)?.worktree?.path;
    // The first prompt is the person's words, not familiar's template around them.
    const person = () => { const x = this.f.task(id) ?? t; return personWords(x); };
    const show = (it: Item) => {
      if (it.kind === 'text' || it.kind === 'thinking' || it.kind === 'prompt') {
        if (it.kind !== 'text') {
          // A prompt starts a line of its own (the answer before it streams without its end of line).
          if (!written.has(it.key)) write.fire((it.kind === 'prompt' && written.size ? '\r\n' : '') + itemAsText(it, wt(), person()));
          written.set(it.key, 1);
          return;
        }
        const text = it.text ?? '';
        const from = written.get(it.key) ?? 0;
        if (text.length > from) write.fire(text.slice(from).replace(/\r?\n/g, '\r\n'));
        written.set(it.key, text.length);
        return;
      }
      if (it.kind === 'tool') {
        const done = it.call!.status === 'completed' || it.call!.status === 'failed';
        if (done && written.get(it.key) !== 2) { write.fire('\r\n' + itemAsText(it, wt())); written.set(it.key, 2); }
        return;
      }
      if (it.kind === 'plan') write.fire('\r\n' + itemAsText(it, wt()));
    };
    let sub: vscode.Disposable | undefined;
    let hinted = false;
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      open: () => {
        write.fire(`\x1b[2m[familiar: "${taskLabel(t)}" runs under the stream driver: its conversation, as text]\x1b[0m\r\n`);
        const feed = this.feed(id);
        feed.loaded.then(() => {
          for (const it of feed.transcript.items) show(it);
          sub = feed.listen(show);
        }, (err) => write.fire(`\r\n[familiar: cannot read the conversation: ${err.message}]\r\n`));
      },
      close: () => sub?.dispose(),
      handleInput: (data) => {
        if (!typed(data) || hinted) return;
        hinted = true;
        write.fire('\r\n\x1b[2m[familiar: a stream task takes no typing; answer its questions, or use Continue… for a follow-up]\x1b[0m\r\n');
      },
    };
    const term = vscode.window.createTerminal({ name: taskLabel(t), pty, iconPath: new vscode.ThemeIcon('hubot') });
    this.terminals.set(id, { term, pump: { dispose: () => sub?.dispose(), wake: () => undefined } });
    term.show();
  }

  async resize(id: string, d: vscode.TerminalDimensions) {
    try {
      await this.f.client?.request('task/resize', { id, cols: d.columns, rows: d.rows });
    } catch (err: any) {
      this.f.log.debug(`resize ${id}: ${err.message}`);
    }
  }
}

function live(s: Status): boolean {
  return s === 'running' || s === 'waiting' || s === 'starting' || s === 'paused';
}

