// Skill files that do not load (skills/changed errors) are said as a
// warning naming each file, relative to the repository, and its line, with
// a button that opens the file there.

import * as vscode from 'vscode';
import * as os from 'os';
import * as path from 'path';
import type { Host } from './host';
import type { SkillsChangedNotification } from './protocol';
import type { Meta } from './client';
import { skillErrorText } from './controls';
import { warn } from './ui';

export async function skillsChanged(f: Host, n: SkillsChangedNotification, meta: Meta) {
  const errors = n.errors ?? [];
  for (const e of errors) f.log.warn(`skill file: ${e.message}`);
  // A replayed change was shown in the window that saw it.
  if (!errors.length || meta.replayed) return;
  const lines = errors.map((e) => skillErrorText(e, f.root, os.homedir()));
  const text = errors.length === 1
    ? `Familiar: a skill did not load: ${lines[0]}`
    : `Familiar: ${errors.length} skills did not load: ${lines.join('; ')}`;
  const pick = await warn(text, 'Open File');
  if (pick !== 'Open File') return;
  const e = errors[0];
  const file = path.isAbsolute(e.path) ? e.path : path.join(f.root ?? '', e.path);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  const line = Math.max(0, (e.line ?? 1) - 1);
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(line, 0, line, 0) });
}
