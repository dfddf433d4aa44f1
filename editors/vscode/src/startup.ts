// A window's start before familiar runs: which familiar to run, a Windows
// host (familiar runs in WSL), a folder that is not a git repository, a
// claude that is missing; and familiar doctor in a terminal of its own.

import * as vscode from 'vscode';
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import type { Host } from './host';
import { BinaryError, describeSource, resolveFamiliar } from './binary';
import { error, gitTop, info, run, warn } from './ui';

/** What the start acts on. */
export interface StartParts {
  status: { say(text: string): void };
  extensionPath: string;
  setRoot(root: string): void;
  connect(): Promise<void>;
}

export class Startup implements vscode.Disposable {
  /** The familiar binary found (findBinary). */
  familiarPath?: string;
  private doctorTerminal?: vscode.Terminal;

  constructor(private readonly f: Host, private readonly d: StartParts) {}

  dispose() {
    this.doctorTerminal?.dispose();
  }

  /**
   * Finds the familiar to run (binary.ts: familiar.path, else the binary
   * this VSIX carries, else PATH) and says in the log which one it is; or
   * says why there is none, a binary of another protocol included.
   */
  async findBinary(): Promise<boolean> {
    try {
      const b = await resolveFamiliar({
        configured: vscode.workspace.getConfiguration('familiar').get<string>('path', ''),
        extensionPath: this.d.extensionPath,
      });
      this.familiarPath = b.path;
      this.f.log.info(`running ${b.path} (${describeSource(b.source)}): familiar ${b.version}, protocol ${b.protocolVersion}`);
      return true;
    } catch (err: any) {
      this.familiarPath = undefined;
      const msg = err instanceof BinaryError ? err.message : String(err?.message ?? err);
      this.f.log.error(msg);
      this.d.status.say('$(hubot) Familiar: no familiar to run');
      const pick = await error(`Familiar: ${msg}`, 'Open Settings');
      if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', 'familiar.path');
      return false;
    }
  }

  /**
   * familiar runs on Linux and macOS; on a Windows host it runs inside WSL,
   * where this extension (extensionKind workspace) runs next to the code.
   */
  async offerWSL() {
    this.d.status.say('$(hubot) Familiar: open the folder in WSL');
    const canReopen = (await vscode.commands.getCommands(true)).includes('remote-wsl.reopenInWSL');
    const action = canReopen ? 'Reopen Folder in WSL' : 'Install the WSL Extension';
    const pick = await info('Familiar runs inside WSL on Windows: reopen this folder in WSL, and Familiar runs its agents there, next to the code.', action);
    if (pick === 'Reopen Folder in WSL') void vscode.commands.executeCommand('remote-wsl.reopenInWSL');
    else if (pick) void vscode.commands.executeCommand('workbench.extensions.installExtension', 'ms-vscode-remote.remote-wsl');
  }

  async offerGitInit(dir: string) {
    this.d.status.say('$(hubot) Familiar: not a git repository');
    const pick = await warn(
      `Familiar: ${path.basename(dir)} is not a git repository. Familiar gives every task its own git worktree.`, 'git init');
    if (pick !== 'git init') return;
    await run('git', ['init'], dir);
    // Worktrees need a first commit to branch from.
    await run('git', ['commit', '--allow-empty', '-m', 'Initial commit'], dir).catch((err) =>
      this.f.log.warn(`initial commit: ${err.message}`));
    this.d.setRoot((await gitTop(dir)) ?? dir);
    void info(`Familiar: made ${path.basename(dir)} a git repository.`);
    await this.d.connect();
  }

  checkClaude(c: { available: boolean; version: string; problem?: string }) {
    if (c.available) return;
    const why = c.problem || 'the claude CLI (Claude Code) was not found';
    void warn(`Familiar: ${why}. Agents cannot start until it is installed.`, 'How to Install', 'Run Doctor').then((p) => {
      if (p === 'How to Install') void vscode.env.openExternal(vscode.Uri.parse('https://docs.anthropic.com/en/docs/claude-code/setup'));
      if (p === 'Run Doctor') void this.runDoctor();
    });
  }

  /**
   * Runs `familiar doctor` in a terminal of its own: its checks print as they
   * run, and its fixes are commands the person runs next to them. A
   * pseudoterminal rather than a shell running familiar, because doctor exits
   * non-zero when it finds a problem and VS Code alerts on that exit.
   */
  async runDoctor() {
    const familiar = this.familiarPath;
    if (!familiar) throw new Error('familiar was not found; set "familiar.path".');
    const cwd = this.f.root ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const write = new vscode.EventEmitter<string>();
    let child: ChildProcess | undefined;
    const lines = (d: string) => write.fire(d.replace(/\r?\n/g, '\r\n'));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      open: () => {
        write.fire('$ familiar doctor\r\n');
        child = spawn(familiar, ['doctor'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout!.setEncoding('utf8').on('data', lines);
        child.stderr!.setEncoding('utf8').on('data', lines);
        child.on('error', (err) => lines(`cannot run familiar: ${err.message}\n`));
        child.on('close', (code) => lines(code === 0 ? '\nall checks passed\n' : `\ndoctor found problems (exit ${code ?? '?'})\n`));
      },
      close: () => child?.kill(),
    };
    this.doctorTerminal?.dispose();
    this.doctorTerminal = vscode.window.createTerminal({ name: 'Familiar: Doctor', pty, iconPath: new vscode.ThemeIcon('hubot') });
    this.doctorTerminal.show();
  }
}
