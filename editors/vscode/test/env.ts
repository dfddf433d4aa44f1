// Test environment: the real familiar binary, the real claude CLI, the
// scripted fake Messages API (internal/fakeapi via bin/fakemodel), a fresh
// git repository and a fake HOME per test.

import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';

export const repoRoot = path.resolve(__dirname, '../../../..');

/** Builds (or reuses $FAMILIAR_BIN / $FAMILIAR_FAKEMODEL) the Go binaries the tests run. */
export function binaries(): { familiar: string; fakemodel: string } {
  const bin = path.join(repoRoot, 'bin');
  let familiar = process.env.FAMILIAR_BIN;
  let fakemodel = process.env.FAMILIAR_FAKEMODEL;
  if (!familiar) {
    familiar = path.join(bin, 'familiar');
    execFileSync('go', ['build', '-o', familiar, './cmd/familiar'], { cwd: repoRoot, stdio: 'inherit' });
  }
  if (!fakemodel) {
    fakemodel = path.join(bin, 'fakemodel');
    execFileSync('go', ['build', '-o', fakemodel, './internal/fakeapi/cmd/fakemodel'], { cwd: repoRoot, stdio: 'inherit' });
  }
  return { familiar, fakemodel };
}

/**
 * The claude CLI, like internal/testenv: $FAMILIAR_CLAUDE, else the pinned
 * one in .tools. Undefined outside CI means "skip"; in CI a missing claude
 * throws, so a green run never hides a skipped test.
 */
export function claude(): string | undefined {
  const candidates = [process.env.FAMILIAR_CLAUDE, path.join(process.env.FAMILIAR_TOOLS_DIR ?? path.join(repoRoot, '.tools'), 'node_modules/.bin/claude')];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  if (process.env.CI) throw new Error('claude CLI not found and CI is set: run bash .ci/run-tools or set FAMILIAR_CLAUDE');
  return undefined;
}

export const skipWithoutClaude = (() => {
  try {
    return claude() ? false : 'claude CLI not installed (bash .ci/run-tools, or set FAMILIAR_CLAUDE)';
  } catch (err) {
    throw err;
  }
})();

export class FakeModel {
  env: Record<string, string> = {};
  private constructor(private readonly proc: ChildProcess) {}

  static async start(fakemodel: string): Promise<FakeModel> {
    const proc = spawn(fakemodel, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const m = new FakeModel(proc);
    const rl = readline.createInterface({ input: proc.stdout! });
    const line = await new Promise<string>((resolve, reject) => {
      rl.once('line', resolve);
      proc.once('exit', (c) => reject(new Error(`fakemodel exited (${c})`)));
    });
    rl.close();
    m.env = JSON.parse(line);
    return m;
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    const done = new Promise((r) => this.proc.once('exit', r));
    this.proc.stdin!.end();
    this.proc.kill('SIGTERM');
    await done;
  }
}

export interface Sandbox {
  dir: string;
  repo: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/** A temp dir with a git repository (one commit) and a fake HOME and XDG dirs. */
export function sandbox(extraEnv: Record<string, string> = {}): Sandbox {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'familiar-vscode-'));
  const repo = path.join(dir, 'repo');
  const home = path.join(dir, 'home');
  fs.mkdirSync(repo);
  fs.mkdirSync(home);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    GIT_AUTHOR_NAME: 'familiar test', GIT_AUTHOR_EMAIL: 'test@familiar.invalid',
    GIT_COMMITTER_NAME: 'familiar test', GIT_COMMITTER_EMAIL: 'test@familiar.invalid',
    ...extraEnv,
  };
  const c = claude();
  if (c) env.FAMILIAR_CLAUDE = c;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'README.md'), 'hello\n');
  git('add', '.');
  git('commit', '-q', '-m', 'initial');
  const cleanup = () => {
    // familiar serve --stdio runs the repository's familiar in the background
    // (it outlives its editors on purpose): stop it before removing its dirs.
    const familiar = process.env.FAMILIAR_BIN ?? path.join(repoRoot, 'bin', 'familiar');
    try {
      execFileSync(familiar, ['stop', '--workspace', repo], { env, stdio: 'pipe', timeout: 120000 });
    } catch {
      // None running.
    }
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
  };
  return { dir, repo, env, cleanup };
}

/** Polls cond until it is truthy or the deadline passes. */
export async function waitFor<T>(what: string, cond: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
