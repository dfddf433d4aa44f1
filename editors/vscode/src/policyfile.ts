// The file the familiar.policyFile setting names: checked before it is sent
// (an unknown key or a default familiar does not know is an error naming
// it, as schemas/policy.schema.json, made from familiar's Go types, says),
// and watched by the extension so an edit takes effect without a reload.

import * as fs from 'fs';
import type { Policy, PolicyDefault } from './protocol';

const keys = ['default', 'allow', 'deny'];
const defaults: PolicyDefault[] = ['ask', 'allow', 'deny'];

export type PolicyRead = { policy: Policy } | { error: string };

/** The policy in text, or what is wrong with it. */
export function parsePolicy(text: string): PolicyRead {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err: any) {
    return { error: `not valid JSON: ${err.message}` };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return { error: 'not a JSON object like {"default": "ask", "allow": [...], "deny": [...]}' };
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) return { error: `unknown key "${k}" (known: ${keys.join(', ')})` };
  }
  if (o.default !== undefined && !defaults.includes(o.default as PolicyDefault)) {
    return { error: `"default" is ${JSON.stringify(o.default)}, not one of ${defaults.join(', ')}` };
  }
  for (const k of ['allow', 'deny']) {
    const rules = o[k];
    if (rules !== undefined && (!Array.isArray(rules) || rules.some((r) => typeof r !== 'string' || r.trim() === ''))) {
      return { error: `"${k}" must be a list of rules such as "Bash(go test:*)" or "Read"` };
    }
  }
  const policy: Policy = { default: (o.default as PolicyDefault | undefined) ?? 'ask' };
  if (o.allow) policy.allow = o.allow as string[];
  if (o.deny) policy.deny = o.deny as string[];
  return { policy };
}

/** The policy in file, or why it cannot be used. */
export function readPolicyFile(file: string): PolicyRead {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err: any) {
    return { error: err.code === 'ENOENT' ? 'no such file' : err.message };
  }
  return parsePolicy(text);
}
