// The connection to familiar as the window holds it: one FamiliarClient
// (made again when familiar.path changes), the last seq saved for the next
// window's replay, what the person is told when it stops, and the waits of
// the modules for it (connected, whenConnected).

import * as vscode from 'vscode';
import { FamiliarClient } from './client';
import type { InitializeResult, SettingsUpdate } from './protocol';
import { error, warn } from './ui';

/** What a connection sets off in the window. */
export interface ConnectionEvents {
  /** The connection's state changed (the status bar). */
  state(): void;
  /** The client's notifications wired to the modules, before it starts. */
  wire(client: FamiliarClient): void;
  /** initialize answered. */
  started(init: InitializeResult): void;
  runDoctor(): Promise<void>;
}

export class Connection {
  client?: FamiliarClient;
  /** Resolves when a client first connects (a task view restored at a window's start waits for it). */
  private readonly firstConnected = deferred<FamiliarClient>();
  private seqSave?: NodeJS.Timeout;

  constructor(private readonly log: vscode.LogOutputChannel, private readonly state: vscode.Memento) {}

  /** Connects to familiarPath serving root, its notifications wired first. */
  async open(familiarPath: string, root: string, settings: () => SettingsUpdate, on: ConnectionEvents) {
    const lastSeq = this.state.get<number>('familiar.lastSeq') ?? 0;
    const client = new FamiliarClient({
      familiarPath,
      workspaceRoot: root,
      clientInfo: { name: 'vscode', version: vscode.version },
      settings,
      lastSeq,
      log: (level, msg) => {
        if (level === 'error') this.log.error(msg);
        else if (level === 'warn') this.log.warn(msg);
        else if (level === 'debug') this.log.debug(msg);
        else this.log.info(msg);
      },
    });
    this.client = client;
    client.onState((s) => {
      if (s === 'connected') this.firstConnected.resolve(client);
      on.state();
      if (s === 'connected' && client.reconnects > 0) vscode.window.setStatusBarMessage('$(check) Familiar: reconnected', 4000);
    });
    client.onExit((e) => {
      void warn(
        `Familiar: familiar stopped (${e.code !== null ? 'exit code ' + e.code : 'signal ' + e.signal}); reconnecting…`, 'Show Log')
        .then((p) => p && this.log.show());
    });
    client.onSeq(() => {
      if (this.seqSave) return;
      this.seqSave = setTimeout(() => {
        this.seqSave = undefined;
        void this.state.update('familiar.lastSeq', client.lastSeq);
      }, 500);
    });
    on.wire(client);
    try {
      const init = await client.start();
      this.log.info(`familiar ${init.serverInfo.version} serving ${init.workspace.root}; claude ${init.claude.available ? init.claude.version : 'missing'}`);
      on.started(init);
    } catch (err: any) {
      this.log.error(`familiar did not start: ${err.message}`);
      void error(`Familiar: familiar did not start: ${err.message}`, 'Show Log', 'Run Doctor').then((p) => {
        if (p === 'Show Log') this.log.show();
        if (p === 'Run Doctor') void on.runDoctor();
      });
    }
  }

  connected(): FamiliarClient {
    const c = this.client;
    if (!c || c.state !== 'connected') throw new Error('familiar is not connected yet.');
    return c;
  }

  /**
   * The client once connected: New Task run while familiar is still starting
   * (the first seconds of a window, or a reconnect) waits for it rather than
   * fail.
   */
  async whenConnected(timeoutMs = 60000): Promise<FamiliarClient> {
    const c = this.client;
    if (!c) {
      // The window is starting: the client comes once familiar is found.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('familiar is not connected yet.')), timeoutMs); });
      try {
        await Promise.race([this.firstConnected.promise, late]);
      } finally {
        clearTimeout(timer);
      }
      return this.connected();
    }
    if (c.state === 'stopped') return this.connected();
    if (c.state === 'connected') return c;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { sub.dispose(); reject(new Error('familiar is not connected yet.')); }, timeoutMs);
      const sub = c.onState((st) => {
        if (st !== 'connected') return;
        clearTimeout(timer);
        sub.dispose();
        resolve();
      });
    });
    return this.connected();
  }
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}
