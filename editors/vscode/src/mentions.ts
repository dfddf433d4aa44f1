// @-mentions: the workspace's files and folders offered as a person types
// "@" in New Task's description or a task view's message box (as in the
// Claude Code extension), and the editor's selection attached as text.
// claude reads an "@path" in a prompt itself: it attaches the file, or lists
// the folder, for the model.

import * as vscode from 'vscode';
import { rankMentions } from './lists';

/** Files listed at most (a larger workspace is searched by the first ones found). */
const maxFiles = 20000;
/** How long a listing of the workspace is reused. */
const listFor = 30_000;

export class Mentions implements vscode.Disposable {
  private files?: Promise<string[]>;
  private at = 0;
  /** The last text editor in front: a webview in front is none. */
  private lastEditor?: vscode.TextEditor = vscode.window.activeTextEditor;
  private readonly sub = vscode.window.onDidChangeActiveTextEditor((e) => { if (e) this.lastEditor = e; });

  dispose() { this.sub.dispose(); }

  /** The editor's selection as text to attach (selectionText). */
  selection(): string | undefined { return selectionText(this.lastEditor); }

  /** Answers a webview's mention messages; true when m was one. */
  async answer(m: any, post: (msg: unknown) => Thenable<boolean>): Promise<boolean> {
    if (m?.type === 'mentionQuery') {
      void post({ type: 'mentionItems', seq: m.seq, items: await this.complete(String(m.q ?? '')) });
      return true;
    }
    if (m?.type === 'attachSelection') {
      const text = this.selection();
      if (text) void post({ type: 'insertText', text });
      else void vscode.window.showInformationMessage('Familiar: select some lines in an editor first; they are attached to the message.');
      return true;
    }
    return false;
  }

  /** The workspace's files, relative to it, read again after listFor. */
  private list(): Promise<string[]> {
    if (!this.files || Date.now() - this.at > listFor) {
      this.at = Date.now();
      this.files = Promise.resolve(vscode.workspace.findFiles('**/*', '{**/node_modules/**,**/.git/**}', maxFiles))
        .then((uris) => uris.map((u) => vscode.workspace.asRelativePath(u, false)))
        .catch(() => []);
    }
    return this.files;
  }

  /** The completions of "@query": files and folders, best first. */
  async complete(query: string, limit = 12): Promise<string[]> {
    return rankMentions(await this.list(), query, limit);
  }
}

/**
 * The selection of the editor beside the view, as text to attach: its file
 * and lines, then the lines themselves fenced; undefined when nothing is
 * selected. A webview in front is no text editor, so the visible ones are
 * asked, the last active first.
 */
export function selectionText(last?: vscode.TextEditor): string | undefined {
  const editors = [last, vscode.window.activeTextEditor, ...vscode.window.visibleTextEditors].filter((e): e is vscode.TextEditor => !!e);
  const e = editors.find((x) => !x.selection.isEmpty && x.document.uri.scheme === 'file');
  if (!e) return undefined;
  const s = e.selection;
  const text = e.document.getText(new vscode.Range(s.start.line, 0, s.end.character === 0 && s.end.line > s.start.line ? s.end.line : s.end.line + 1, 0)).replace(/\n$/, '');
  const first = s.start.line + 1;
  const last1 = s.end.character === 0 && s.end.line > s.start.line ? s.end.line : s.end.line + 1;
  const rel = vscode.workspace.asRelativePath(e.document.uri, false);
  const fence = text.includes('```') ? '````' : '```';
  return `From ${rel}, line${last1 > first ? 's' : ''} ${first}${last1 > first ? `–${last1}` : ''}:\n${fence}${e.document.languageId}\n${text}\n${fence}\n`;
}
