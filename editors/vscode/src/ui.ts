// Small helpers every module shares: notifications whose text cannot turn
// into links, the UI tests' trace, git, and text formatting.

import * as vscode from 'vscode';
import * as fs from 'fs';
import { execFile } from 'child_process';
import { noLinks, plainText } from './model';

/**
 * With FAMILIAR_VSCODE_TRACE=FILE, timing points go to FILE as JSON lines
 * (the UI tests measure question latency from them). Off by default.
 */
export const traceFile = process.env.FAMILIAR_VSCODE_TRACE;
export function trace(ev: Record<string, unknown>) {
  if (!traceFile) return;
  try {
    fs.appendFileSync(traceFile, JSON.stringify({ at: Date.now(), ...ev }) + '\n');
  } catch {
    // Tracing never breaks the extension.
  }
}


export function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

export async function gitTop(dir: string): Promise<string | undefined> {
  try {
    return (await run('git', ['rev-parse', '--show-toplevel'], dir)).trim() || undefined;
  } catch {
    return undefined;
  }
}

export function gitShow(root: string, spec: string): Promise<string> {
  return run('git', ['show', spec], root);
}

export function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'task';
}

export function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|]/g, '\\$&');
}

export function localTime(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleTimeString();
}

export function decidedLabel(by: string): string {
  return ({ user: 'in another window', policy: 'by the policy', timeout: 'it timed out', agent: 'by the agent', elsewhere: 'elsewhere' } as Record<string, string>)[by] ?? by;
}

// Notifications whose text cannot turn into links (see noLinks) and shows no
// Markdown (plainText: summaries, details and familiar's texts use it): every
// message of the extension goes through these.
export function info(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showInformationMessage(noLinks(plainText(message)), ...rest);
}

export function warn(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showWarningMessage(noLinks(plainText(message)), ...rest);
}

export function error(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showErrorMessage(noLinks(plainText(message)), ...rest);
}

/** With tracing on: the extension host's CPU time and event-loop delay, once a second. */
export function traceHost(context: vscode.ExtensionContext) {
  if (!traceFile) return;
  const { monitorEventLoopDelay, PerformanceObserver } = require('perf_hooks') as typeof import('perf_hooks');
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  // The garbage collector's pauses (the whole host's: every extension's
  // garbage): a long one holds the event loop as any work does.
  let gcMs = 0, gcMaxMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcMaxMs = Math.max(gcMaxMs, e.duration);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  let cpu = process.cpuUsage();
  // How long the event loop's thread waited for a CPU (Linux: schedstat's
  // run-queue time): on a loaded machine a delay is the machine's, not the
  // host's work, and this tells the two apart.
  const runWait = () => {
    try {
      return Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
    } catch {
      return NaN;
    }
  };
  let waited = runWait();
  const timer = setInterval(() => {
    const d = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    const w = runWait();
    trace({ ev: 'host', cpuMs: Math.round((d.user + d.system) / 1000), lagP99Ms: Math.round(lag.percentile(99) / 1e6), lagMaxMs: Math.round(lag.max / 1e6),
      gcMs: Math.round(gcMs), gcMaxMs: Math.round(gcMaxMs), heapMB: Math.round(process.memoryUsage().heapUsed / 1e6), runWaitMs: Number.isNaN(w) ? undefined : Math.round(w - waited) });
    waited = w;
    lag.reset();
    gcMs = gcMaxMs = 0;
  }, 1000);
  context.subscriptions.push({ dispose: () => { clearInterval(timer); lag.disable(); gc.disconnect(); } });
  const prefix = process.env.FAMILIAR_VSCODE_PROFILE;
  if (prefix) profileHost(context, prefix);
}

/**
 * With tracing on and FAMILIAR_VSCODE_PROFILE=<prefix>: the extension host's
 * CPU profile (<prefix>.NN.cpuprofile) and its sampled allocations, the
 * collected ones included (<prefix>.NN.heapprofile), in pieces of 10 s, for
 * finding what holds its event loop (DevTools reads both).
 */
function profileHost(context: vscode.ExtensionContext, prefix: string) {
  const inspector = require('inspector') as typeof import('inspector');
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object) => new Promise<any>((resolve, reject) => session.post(method, params, (err: any, r: any) => (err ? reject(err) : resolve(r))));
  const start = () => Promise.all([
    post('Profiler.start'),
    post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
  ]);
  void Promise.all([post('Profiler.enable'), post('HeapProfiler.enable')]).then(() => post('Profiler.setSamplingInterval', { interval: 200 })).then(start).catch(() => undefined);
  let n = 0;
  const timer = setInterval(async () => {
    try {
      const [cpu, heap] = await Promise.all([post('Profiler.stop'), post('HeapProfiler.stopSampling')]);
      const base = `${prefix}.${String(++n).padStart(2, '0')}`;
      fs.writeFileSync(`${base}.cpuprofile`, JSON.stringify(cpu.profile));
      fs.writeFileSync(`${base}.heapprofile`, JSON.stringify(heap.profile));
      await start();
    } catch {
      // Profiling never breaks the extension.
    }
  }, 10000);
  context.subscriptions.push({ dispose: () => { clearInterval(timer); session.disconnect(); } });
}
