// Host: what the extension's modules need of it — the connection to
// familiar, the tasks it knows, the log and the few shared pieces of UI
// they act on. extension.ts's Familiar implements it; every module gets it
// in its constructor or its function's first argument and never imports
// extension.ts, so the modules depend on this narrow contract, not on the
// class that wires them (issue 38). Its types are protocol.ts's, the
// client's and VS Code's only: nothing here imports a module that takes a
// Host.

import type * as vscode from 'vscode';
import type { FamiliarClient } from './client';
import type { Task } from './protocol';

export interface Host {
  /** The repository's root (git's top level), once found. */
  readonly root?: string;
  /** The connection to familiar, once made: its tasks, its initialize result. */
  readonly client?: FamiliarClient;
  /** The extension's output channel. */
  readonly log: vscode.LogOutputChannel;
  /** familiar's undo window, as settings/update last answered. */
  readonly undoWindowSec: number;

  /** The task as last heard of, if familiar has told of it. */
  task(id: string): Task | undefined;
  /** The client, connected; throws when familiar is not connected. */
  connected(): FamiliarClient;
  /** The client once connected (a window's first seconds, a reconnect), up to timeoutMs. */
  whenConnected(timeoutMs?: number): Promise<FamiliarClient>;
  /** The whole of a text familiar showed clipped (task/text's ref), paged. */
  text(id: string, ref: string): Promise<string>;
  /** Says an error to the person (a notification) and the log. */
  fail(err: unknown): void;
  /** Redraws the status bar's counts. */
  updateStatus(): void;
  /** Continue…: asks for a follow-up message and sends it (task/send). */
  continueTask(id: string): Promise<void>;

  /** The task tree. */
  readonly tree: {
    refresh(): void;
    taskChanged(id: string): void;
    /** Shows only the tasks a search found (undefined: every task again). */
    setFilter(f?: { label: string; tasks: Task[]; total: number }): void;
  };
  /** Texts served read-only to VS Code's editors (familiar-text:). */
  readonly texts: {
    put(text: string, file: string): vscode.Uri;
    diff(before: string, after: string, file: string, title: string): Promise<void>;
  };
  /** @-mentions and the editor's selection for a webview's text box. */
  readonly mentions: {
    answer(m: unknown, post: (msg: unknown) => Thenable<boolean>): Promise<boolean>;
  };
  /** The pending questions' notifications. */
  readonly questions: {
    /** An answer given in a task view (its card). */
    fromView(taskId: string, questionId: string, m: { action?: string; optionId?: string; text?: string }): Promise<void>;
    /** The task's turn is being stopped: its "what instead?" is not to become a notification. */
    stopped(taskId: string): void;
    /** Takes a question's notification away (it is being answered in the task view); it may come back. */
    hidePrompt(taskId: string, questionId: string): void;
  };
  /** The task views. */
  readonly taskViews: {
    taskChanged(t: Task): void;
  };
  /** The plans: whether a task is a plan's step (its plan says its end and merges it). */
  readonly plans: {
    contains(taskId: string): boolean;
  };
  /** Which task ends were announced. */
  readonly ends: {
    forget(id: string): void;
  };
}
