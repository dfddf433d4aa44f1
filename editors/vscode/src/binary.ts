// Which familiar binary the extension runs, and whether it may: a
// familiar.path setting wins; else the binary this platform's VSIX carries
// (bin/familiar inside the extension, put there by `make dist`); else
// familiar on PATH (a build from source, `go install`). Before it is run,
// `familiar version --json` must name the protocol this extension speaks.
// No vscode import: test:fast runs it in plain Node.

import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

/** The protocol version this extension speaks (PROTOCOL.md, initialize). */
export const PROTOCOL_VERSION = 1;

export type BinarySource = 'setting' | 'bundled' | 'PATH';

export interface FamiliarBinary {
  path: string;
  source: BinarySource;
  version: string;
  protocolVersion: number;
}

export interface ResolveOptions {
  /** The familiar.path setting, as set ('' when unset). */
  configured: string;
  /** The extension's install directory (context.extensionPath). */
  extensionPath: string;
  /** Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** How long `familiar version --json` may take; default 10 s. */
  timeoutMs?: number;
}

/** Why no binary can be run; message is for the person. */
export class BinaryError extends Error {
  constructor(readonly kind: 'notFound' | 'mismatch' | 'broken', message: string, readonly path?: string) {
    super(message);
  }
}

/** Where the bundled binary is inside the extension. */
export function bundledPath(extensionPath: string): string {
  return path.join(extensionPath, 'bin', process.platform === 'win32' ? 'familiar.exe' : 'familiar');
}

/** The binary to run and where it came from, or undefined; nothing is run. */
export function locate(opts: ResolveOptions): { path: string; source: BinarySource } | undefined {
  const env = opts.env ?? process.env;
  const configured = opts.configured.trim();
  if (configured) {
    const p = configured.startsWith('~') ? path.join(env.HOME ?? '', configured.slice(1)) : configured;
    return { path: p, source: 'setting' };
  }
  const bundled = bundledPath(opts.extensionPath);
  if (fs.existsSync(bundled)) {
    // A VSIX may lose the executable bit on the way (unzip tools differ).
    if (!isExecutable(bundled)) {
      try { fs.chmodSync(bundled, 0o755); } catch { /* reported when it fails to run */ }
    }
    return { path: bundled, source: 'bundled' };
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, 'familiar');
    if (isExecutable(p)) return { path: p, source: 'PATH' };
  }
  return undefined;
}

/**
 * Finds the binary (locate) and asks it its version: rejects with a
 * BinaryError when there is none, it does not run, or it speaks another
 * protocol than PROTOCOL_VERSION (the message names both).
 */
export async function resolveFamiliar(opts: ResolveOptions): Promise<FamiliarBinary> {
  const found = locate(opts);
  if (!found) {
    throw new BinaryError('notFound', 'the familiar program was not found: this extension carries none for this platform, and there is none on PATH. Set "familiar.path", or install familiar (go install github.com/familiar-dev/familiar/cmd/familiar@latest).');
  }
  if (found.source === 'setting' && !isExecutable(found.path)) {
    throw new BinaryError('notFound', `"familiar.path" is ${found.path}, which is not an executable file.`, found.path);
  }
  let out: string;
  try {
    out = await new Promise<string>((resolve, reject) => {
      execFile(found.path, ['version', '--json'], { timeout: opts.timeoutMs ?? 10_000, env: opts.env ?? process.env }, (err, stdout, stderr) => {
        if (err) reject(new Error((stderr || '').trim() || err.message));
        else resolve(stdout);
      });
    });
  } catch (err: any) {
    throw new BinaryError('broken', `${found.path} (${describeSource(found.source)}) did not run: ${err.message}`, found.path);
  }
  let v: { version?: unknown; protocolVersion?: unknown };
  try {
    v = JSON.parse(out.trim());
  } catch {
    // familiar before `version --json` printed "familiar X" and ignored the flag.
    throw new BinaryError('mismatch', `${found.path} (${describeSource(found.source)}) is a familiar too old to name its protocol (it answered ${JSON.stringify(out.trim().slice(0, 80))}); this extension speaks protocol ${PROTOCOL_VERSION}. Update familiar or the extension.`, found.path);
  }
  if (typeof v.protocolVersion !== 'number') {
    throw new BinaryError('broken', `${found.path} (${describeSource(found.source)}) answered version --json without a protocolVersion.`, found.path);
  }
  const binary: FamiliarBinary = { path: found.path, source: found.source, version: String(v.version ?? '?'), protocolVersion: v.protocolVersion };
  if (binary.protocolVersion !== PROTOCOL_VERSION) {
    throw new BinaryError('mismatch', `${binary.path} (${describeSource(binary.source)}, familiar ${binary.version}) speaks protocol ${binary.protocolVersion}; this extension speaks protocol ${PROTOCOL_VERSION}. Use a familiar and an extension of the same release.`, binary.path);
  }
  return binary;
}

/** How a person is told where a binary came from. */
export function describeSource(source: BinarySource): string {
  switch (source) {
    case 'setting': return 'from "familiar.path"';
    case 'bundled': return 'bundled with the extension';
    case 'PATH': return 'found on PATH';
  }
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}
