// FamiliarClient owns the connection to `familiar serve --stdio`: it starts
// the process, initializes, keeps the tasks in memory, and when familiar
// goes away it reconnects and replays what it missed from task/events, so
// the UI never loses a question or a completion. It has no VS Code
// dependency: the fast tests drive it in plain Node against the real binary.

import { ChildProcess, spawn } from 'child_process';
import { PROTOCOL_VERSION } from './binary';
import * as rpc from 'vscode-jsonrpc/node';
import { Emitter } from 'vscode-jsonrpc';
import type {
  InitializeResult, Methods, Notifications, Plan, Queue, TaskOutputResult, ServerMessageNotification, SettingsUpdate, Task, TaskCompletedNotification,
  TaskOutputNotification, TaskQuestionNotification, TaskTranscriptNotification, TaskQuestionResolvedNotification,
  TaskHookNotification, SkillsChangedNotification,
} from './protocol';
import { newerOrSame } from './model';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type ConnectionState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

export interface ClientOptions {
  familiarPath: string;
  workspaceRoot: string;
  env?: NodeJS.ProcessEnv;
  clientInfo?: { name: string; version: string };
  settings?: () => SettingsUpdate;
  log?: (level: LogLevel, message: string) => void;
  /** The last seq a previous instance saw (e.g. before a window reload). */
  lastSeq?: number;
  /** Delays between reconnect attempts, the last one repeating. */
  backoffMs?: number[];
}

/** A notification as the UI receives it; replayed is set for events read back from task/events. */
export interface Meta { replayed: boolean }

/** Every notification familiar sends: the compiler checks this against protocol.ts's Notifications. */
const notificationMethods = {
  'task/updated': true, 'task/output': true, 'task/question': true, 'task/questionResolved': true, 'task/completed': true,
  'server/message': true, 'skills/changed': true, 'task/hook': true, 'task/transcript': true, 'queue/updated': true,
  'plan/updated': true,
} satisfies Record<keyof Notifications, true>;

/** One notification as applied: its method and its params, typed together. */
type Applied = { [N in keyof Notifications]: { method: N; params: Notifications[N]; meta: Meta } }[keyof Notifications];

const replayPage = 1000;
const listPage = 200;

export class FamiliarClient {
  readonly tasks = new Map<string, Task>();
  /** The merge queue: the running one, else the last (queue/status at connect, then queue/updated). */
  queue?: Queue;
  /** The plans (plan/list at connect, then plan/updated). */
  readonly plans = new Map<string, Plan>();
  lastSeq = 0;
  state: ConnectionState = 'disconnected';
  init?: InitializeResult;
  /** How many times a connection was re-established after a loss. */
  reconnects = 0;

  private proc?: ChildProcess;
  private conn?: rpc.MessageConnection;
  private stopping = false;
  private replaying = false;
  private queued: { method: keyof Notifications; params: any }[] = [];
  private retry?: NodeJS.Timeout;
  private attempt = 0;
  private generation = 0;
  private readonly log: (level: LogLevel, message: string) => void;

  private readonly _onState = new Emitter<ConnectionState>();
  private readonly _onTasks = new Emitter<void>();
  private readonly _onTask = new Emitter<Task>();
  private readonly _onOutput = new Emitter<TaskOutputNotification>();
  private readonly _onQuestion = new Emitter<[TaskQuestionNotification, Meta]>();
  private readonly _onResolved = new Emitter<[TaskQuestionResolvedNotification, Meta]>();
  private readonly _onCompleted = new Emitter<[TaskCompletedNotification, Meta]>();
  private readonly _onMessage = new Emitter<[ServerMessageNotification, Meta]>();
  private readonly _onTranscript = new Emitter<TaskTranscriptNotification>();
  private readonly _onQueue = new Emitter<[Queue, Meta]>();
  private readonly _onPlan = new Emitter<Plan>();
  private readonly _onHook = new Emitter<TaskHookNotification>();
  private readonly _onSkillsChanged = new Emitter<[SkillsChangedNotification, Meta]>();
  private readonly _onSeq = new Emitter<number>();
  private readonly _onExit = new Emitter<{ code: number | null; signal: string | null; stderrTail: string }>();
  private readonly _onNotification = new Emitter<Applied>();
  /** Connection state changes. */
  readonly onState = this._onState.event;
  /** The whole task set was reloaded (after connecting). */
  readonly onTasks = this._onTasks.event;
  /** One task changed. */
  readonly onTask = this._onTask.event;
  readonly onOutput = this._onOutput.event;
  readonly onQuestion = this._onQuestion.event;
  readonly onQuestionResolved = this._onResolved.event;
  readonly onCompleted = this._onCompleted.event;
  readonly onServerMessage = this._onMessage.event;
  /** task/transcript: one entry of a task's structured transcript (live, and replayed after a reconnect). */
  readonly onTranscript = this._onTranscript.event;
  /** queue/updated: a step of the merge queue (replayed ones too, in order). */
  readonly onQueue = this._onQueue.event;
  /** plan/updated: a plan changed (replayed ones too, in order). */
  readonly onPlan = this._onPlan.event;
  /** task/hook: a hook call of a verbose task (live, and replayed after a reconnect; a view dedupes by seq). */
  readonly onHook = this._onHook.event;
  /** skills/changed: the skill files changed, with the ones that did not load. */
  readonly onSkillsChanged = this._onSkillsChanged.event;
  /** lastSeq advanced (persist it to replay after a reload). */
  readonly onSeq = this._onSeq.event;
  /** The familiar process ended without being asked to. */
  readonly onExit = this._onExit.event;

  constructor(private readonly opts: ClientOptions) {
    this.log = opts.log ?? (() => undefined);
    this.lastSeq = opts.lastSeq ?? 0;
  }

  /** Connects; resolves with initialize's result, rejects if the first attempt fails. */
  async start(): Promise<InitializeResult> {
    this.stopping = false;
    return this.connect();
  }

  private setState(s: ConnectionState) {
    if (this.state !== s) {
      this.state = s;
      this._onState.fire(s);
    }
  }

  private async connect(): Promise<InitializeResult> {
    const gen = ++this.generation;
    this.setState('connecting');
    const stderr: string[] = [];
    const proc = spawn(this.opts.familiarPath, ['serve', '--stdio'], {
      cwd: this.opts.workspaceRoot,
      env: this.opts.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc = proc;
    const spawnError = new Promise<never>((_, reject) => proc.once('error', (err) => reject(new Error(`cannot start ${this.opts.familiarPath}: ${err.message}`))));
    spawnError.catch(() => undefined);
    let partial = '';
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line) continue;
        stderr.push(line);
        if (stderr.length > 20) stderr.shift();
        this.log(levelOf(line), line);
      }
    });
    const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout!, { charset: 'utf-8', contentTypeDecoder: outputSkippingDecoder }), new rpc.StreamMessageWriter(proc.stdin!));
    this.conn = conn;
    for (const m of Object.keys(notificationMethods) as (keyof Notifications)[]) conn.onNotification(m, (params: any) => this.notification(m, params));
    let lost = false;
    const onLost = () => {
      if (lost || gen !== this.generation) return;
      lost = true;
      this.lostConnection(proc, stderr.join('\n'));
    };
    conn.onClose(onLost);
    proc.once('exit', onLost);
    proc.stdin!.on('error', () => undefined);
    conn.listen();

    try {
      const init = await Promise.race([
        conn.sendRequest<InitializeResult>('initialize', {
          workspaceRoot: this.opts.workspaceRoot,
          protocolVersion: PROTOCOL_VERSION,
          clientInfo: this.opts.clientInfo ?? { name: 'familiar-vscode', version: '0' },
          settings: this.opts.settings?.(),
          // Terminals read the log by offset (OutputPump): task/output only
          // has to wake them. familiar then sends it without data, one per
          // task at a time, so a flooding task cannot overrun this window.
          outputData: false,
        }),
        spawnError,
      ]);
      this.init = init;
      await this.catchUp();
      this.attempt = 0;
      this.setState('connected');
      return init;
    } catch (err) {
      if (gen === this.generation && !lost) {
        lost = true;
        this.dispose(proc, conn);
        this.lostConnection(proc, stderr.join('\n'), true);
      }
      throw err;
    }
  }

  /**
   * Replays the events after lastSeq, then reloads the task list; live
   * notifications that arrive meanwhile wait in a queue and are applied
   * after, without the ones already replayed.
   */
  private async catchUp() {
    this.replaying = true;
    try {
      if (this.lastSeq === 0) {
        // Nothing seen yet: learn the current seq; the task list has the state.
        const r = await this.request('task/events', { sinceSeq: Number.MAX_SAFE_INTEGER, limit: 1 });
        this.advance(r.lastSeq);
      } else {
        for (;;) {
          const r = await this.request('task/events', { sinceSeq: this.lastSeq, limit: replayPage });
          // An event of a notification this client does not know only moves lastSeq on.
          for (const e of r.events) this.apply(e.method as keyof Notifications, e.params, true);
          if (r.events.length === 0 || this.lastSeq >= r.lastSeq) {
            this.advance(r.lastSeq);
            break;
          }
        }
      }
      const seen = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await this.request('task/list', { limit: listPage, cursor });
        for (const t of page.tasks) {
          seen.add(t.id);
          const old = this.tasks.get(t.id);
          if (!old || newerOrSame(t.updatedAt, old.updatedAt)) this.tasks.set(t.id, t);
        }
        cursor = page.nextCursor || undefined;
      } while (cursor);
      for (const id of [...this.tasks.keys()]) if (!seen.has(id)) this.tasks.delete(id);
      // The queue as it is now (a familiar without one answers -32601).
      const st = await this.request('queue/status', {}).catch(() => undefined);
      if (st) this.queue = st.queue;
      // The plans (a familiar without them answers -32601).
      const plans = await this.request('plan/list', {}).catch(() => undefined);
      if (plans) {
        this.plans.clear();
        for (const p of plans.plans) this.plans.set(p.id, p);
      }
    } finally {
      this.replaying = false;
      const q = this.queued;
      this.queued = [];
      for (const n of q) this.apply(n.method, n.params, false);
    }
    this._onTasks.fire();
  }

  private advance(seq: number) {
    if (seq > this.lastSeq) {
      this.lastSeq = seq;
      this._onSeq.fire(seq);
    }
  }

  /**
   * Every notification of one method, once (after a reconnect's replay, not
   * twice), its params typed by protocol.ts; replayed ones say so in meta.
   */
  onNotification<N extends keyof Notifications>(method: N, fn: (params: Notifications[N], meta: Meta) => void): { dispose(): void } {
    return this._onNotification.event((n) => {
      if (n.method === method) fn(n.params as Notifications[N], n.meta);
    });
  }

  private notification(method: keyof Notifications, params: any) {
    if (this.replaying) {
      this.queued.push({ method, params });
      return;
    }
    this.apply(method, params, false);
  }

  /** Applies one notification unless its seq was already seen. */
  private apply(method: keyof Notifications, raw: any, replayed: boolean) {
    const seq = typeof raw?.seq === 'number' ? raw.seq : 0;
    if (seq !== 0 && seq <= this.lastSeq) return;
    if (seq) this.advance(seq);
    const meta = { replayed };
    const n = { method, params: raw, meta } as Applied;
    this._onNotification.fire(n);
    switch (n.method) {
      case 'task/updated': {
        const params = n.params;
        const t = params.task;
        const old = this.tasks.get(t.id);
        if (old && !newerOrSame(t.updatedAt, old.updatedAt)) return;
        this.tasks.set(t.id, t);
        this._onTask.fire(t);
        return;
      }
      case 'task/output':
        if (!replayed) this._onOutput.fire(n.params);
        return;
      case 'task/question':
        this._onQuestion.fire([n.params, meta]);
        return;
      case 'task/questionResolved':
        this._onResolved.fire([n.params, meta]);
        return;
      case 'task/completed':
        this._onCompleted.fire([n.params, meta]);
        return;
      case 'server/message':
        this._onMessage.fire([n.params, meta]);
        return;
      case 'queue/updated': {
        const q = n.params.queue;
        this.queue = q;
        this._onQueue.fire([q, meta]);
        return;
      }
      case 'plan/updated': {
        const p = n.params.plan;
        const old = this.plans.get(p.id);
        if (old && !newerOrSame(p.updatedAt, old.updatedAt)) return;
        this.plans.set(p.id, p);
        this._onPlan.fire(p);
        return;
      }
      case 'task/transcript':
        // Replayed ones too: a task view open across a reconnect dedupes by seq.
        this._onTranscript.fire(n.params);
        return;
      case 'task/hook':
        this._onHook.fire(n.params);
        return;
      case 'skills/changed':
        this._onSkillsChanged.fire([n.params, meta]);
        return;
    }
  }

  private lostConnection(proc: ChildProcess, stderrTail: string, duringConnect = false) {
    if (this.stopping) return;
    this.conn?.dispose();
    this.conn = undefined;
    this.setState('disconnected');
    if (!duringConnect) this._onExit.fire({ code: proc.exitCode, signal: proc.signalCode, stderrTail });
    this.log('warn', `familiar connection lost (exit ${proc.exitCode ?? proc.signalCode ?? '?'}); reconnecting`);
    this.scheduleReconnect();
  }

  private scheduleReconnect() {
    if (this.stopping || this.retry) return;
    const backoff = this.opts.backoffMs ?? [200, 500, 1000, 2000, 5000];
    const delay = backoff[Math.min(this.attempt, backoff.length - 1)];
    this.attempt++;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().then(
        () => {
          this.reconnects++;
          this.log('info', 'reconnected to familiar');
        },
        (err) => this.log('warn', `reconnect failed: ${err.message}`),
      );
    }, delay);
  }

  /** Reconnects now (e.g. after settings changed the path), replaying what was missed. */
  async restart(): Promise<InitializeResult> {
    this.stopping = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    await this.close();
    this.stopping = false;
    this.attempt = 0;
    return this.connect();
  }

  /**
   * Sends a request; fails at once when not connected. Its params and its
   * result are the method's, from protocol.ts's Methods (generated from
   * protocol.Server): a misspelt method or a wrong param is a compile error.
   */
  request<M extends keyof Methods>(method: M, params: Methods[M]['params']): Promise<Methods[M]['result']> {
    const conn = this.conn;
    if (!conn) return Promise.reject(new Error('familiar is not connected'));
    return conn.sendRequest(method, params ?? {});
  }

  /** Pages through a task's output log from offset, up to maxBytes. */
  async output(id: string, offset: number, limit = 65536): Promise<TaskOutputResult> {
    return this.request('task/output', { id, offset, limit });
  }

  /** Ends the session: shutdown + exit, then the process is waited for (killed after a grace). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    await this.close();
    this.setState('stopped');
  }

  /** Leaves without shutdown: familiar keeps running for others (like a window reload). */
  async detach(): Promise<void> {
    this.stopping = true;
    if (this.retry) clearTimeout(this.retry);
    const proc = this.proc, conn = this.conn;
    this.generation++;
    if (proc && conn) this.dispose(proc, conn);
    if (proc) await waitExit(proc, 10000);
    this.setState('stopped');
  }

  private async close() {
    const proc = this.proc, conn = this.conn;
    this.generation++;
    if (!proc) return;
    if (conn) {
      try {
        await withTimeout(conn.sendRequest('shutdown'), 15000);
        await conn.sendNotification('exit');
      } catch {
        // Already gone.
      }
      this.dispose(proc, conn);
    }
    await waitExit(proc, 15000);
  }

  private dispose(proc: ChildProcess, conn: rpc.MessageConnection) {
    conn.dispose();
    proc.stdin?.end();
    if (this.conn === conn) this.conn = undefined;
  }

  /** The familiar child's pid (tests use it to simulate a crash). */
  get pid(): number | undefined {
    return this.proc?.pid;
  }
}

/**
 * Decodes frames like vscode-jsonrpc's JSON decoder, except task/output
 * notifications: their data is never used (terminals read the log by offset
 * through task/output, see OutputPump), so only id and seq are read from the
 * frame's ends and the data is not parsed. A task flooding its terminal at
 * 20 MB/s would otherwise cost the extension host a JSON.parse of 20 MB/s.
 * familiar encodes with sorted keys ({"jsonrpc","method","params":{"data",
 * "id","seq"}}); anything else is parsed normally. Inside the data string
 * every quote is escaped, so the anchored tail can only be the real one.
 */
const outputHead = '{"jsonrpc":"2.0","method":"task/output","params":{"data":"';
const outputTail = /","id":"([^"\\]*)","seq":(\d+)\}\}\s*$/;
// The same in struct order (seq, id, data), as the background familiar writes it.
const outputStructHead = /^\{"jsonrpc":"2\.0","method":"task\/output","params":\{"seq":(\d+),"id":"([^"\\]*)","data":"/;
export const outputSkippingDecoder = {
  name: 'application/json',
  decode(buffer: Uint8Array, options: { charset: string }): Promise<any> {
    const buf = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (buf.length > outputHead.length && buf.toString('latin1', 0, outputHead.length) === outputHead) {
      const m = outputTail.exec(buf.toString('latin1', Math.max(0, buf.length - 160)));
      if (m) return Promise.resolve({ jsonrpc: '2.0', method: 'task/output', params: { seq: Number(m[2]), id: m[1], data: '' } });
    }
    const h = outputStructHead.exec(buf.toString('latin1', 0, Math.min(buf.length, 200)));
    if (h && /"\}\}\s*$/.test(buf.toString('latin1', Math.max(0, buf.length - 8)))) {
      return Promise.resolve({ jsonrpc: '2.0', method: 'task/output', params: { seq: Number(h[1]), id: h[2], data: '' } });
    }
    try {
      return Promise.resolve(JSON.parse(buf.toString(options.charset as BufferEncoding)));
    } catch (err) {
      return Promise.reject(err);
    }
  },
};

function levelOf(line: string): LogLevel {
  const m = /"level":"(DEBUG|INFO|WARN|ERROR)"/.exec(line);
  return m ? (m[1].toLowerCase() as LogLevel) : 'info';
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => { t = setTimeout(() => reject(new Error('timed out')), ms); })]).finally(() => clearTimeout(t));
}

function waitExit(proc: ChildProcess, ms: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      proc.kill('SIGKILL');
    }, ms);
    proc.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
  });
}
