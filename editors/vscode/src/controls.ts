// The words and choices of issue 26's controls (mode, directives, skills,
// MCP servers), as pure functions for the fast tests: modes.ts, skills.ts,
// mcp.ts and New Task put them on screen.

import type { AuthStatus, McpPreset, McpServer, McpServerCheck, Mode, Profile, Skill, SkillError, TaskType } from './protocol';

/** What each mode lets the agent do, in the words the pickers show. */
export const modeWords: Record<Mode, string> = {
  executor: 'changes code and runs commands',
  architect: 'plans only: reads the code, changes nothing',
  auditor: 'reviews and runs the tests and linters; any write or other command is refused without asking',
};

/** The Change Mode… choices: every mode but the task's own, which is marked. */
export function modeChoices(current: Mode): { mode: Mode; label: string; description: string; current: boolean }[] {
  return (['executor', 'architect', 'auditor'] as Mode[]).map((m) => ({
    mode: m, label: m, description: modeWords[m] + (m === current ? ' (now)' : ''), current: m === current,
  }));
}

/** Statuses whose mode task/setMode changes (familiar refuses merged and cancelled tasks). */
export function canSetMode(status: string): boolean {
  return status !== 'merged' && status !== 'cancelled';
}

/**
 * What elevated allows, said before a person turns it on: the agent runs
 * every tool call without asking, and only a deny rule stops one.
 */
export const elevatedWarning =
  'Elevated: the agent runs every tool call (commands, edits, network) without asking you. A deny rule in the permission policy still wins.';

export const directiveWords: Record<'think' | 'verbose' | 'elevated', string> = {
  think: 'Think: the agent thinks longer before it answers (slower, costs more)',
  verbose: 'Verbose: every hook call of the agent is shown in the task view',
  elevated: 'Elevated: run every tool call without asking',
};

/**
 * The models New Task offers (task/create model): the aliases the claude
 * CLI takes for --model, and "" for claude's own choice.
 */
export const modelChoices: [string, string][] = [
  ['', 'claude\'s default'],
  ['sonnet', 'sonnet — the latest Sonnet'],
  ['opus', 'opus — the latest Opus'],
  ['haiku', 'haiku — the latest Haiku (fast, cheaper)'],
  ['opusplan', 'opusplan — Opus to plan, Sonnet to work'],
];

/**
 * Which login the agents use, in words (initialize's claude.auth), never
 * the secret: "your Claude subscription", "API key from ANTHROPIC_API_KEY".
 */
export function loginWords(a?: AuthStatus): string {
  if (!a) return '';
  const from = a.source ? ` from ${a.source}` : '';
  const words: Record<string, string> = {
    claude_login: 'your Claude subscription (claude login)',
    oauth_token: `a Claude subscription token${from || ' from CLAUDE_CODE_OAUTH_TOKEN'}`,
    api_key: `API key${from || ' from ANTHROPIC_API_KEY'}`,
    api_key_helper: `an API key from the apiKeyHelper${a.source ? ` in ${a.source}` : ''}`,
    auth_token: `a bearer token${from || ' from ANTHROPIC_AUTH_TOKEN'}`,
    bedrock: 'Amazon Bedrock (your AWS credentials)',
    vertex: 'Google Vertex AI (your Google Cloud credentials)',
    foundry: 'Microsoft Foundry (your Azure credentials)',
    none: 'no login: claude has none (run claude login, or set ANTHROPIC_API_KEY)',
  };
  const w = words[a.method] ?? a.method.replace(/_/g, ' ');
  return a.problem && a.method !== 'none' ? `${w} — ${a.problem}` : w;
}

const sourceRank: Record<string, number> = { workspace: 3, global: 2, builtin: 1 };

/**
 * The profile familiar gives a task of this type when New Task names none
 * (profiles.Set.Resolve): of the profiles claiming the type, the
 * repository's over the user's over the built-in ones, then the one named
 * like the type, then by name; else "default".
 */
export function profileFor(chosen: string, type: TaskType, profiles: Pick<Profile, 'name' | 'taskTypes' | 'source'>[]): string {
  if (chosen) return chosen;
  let best: Pick<Profile, 'name' | 'taskTypes' | 'source'> | undefined;
  for (const p of profiles) {
    if (!(p.taskTypes ?? []).includes(type)) continue;
    if (!best) { best = p; continue; }
    const ra = sourceRank[p.source] ?? 0, rb = sourceRank[best.source] ?? 0;
    if (ra !== rb) { if (ra > rb) best = p; continue; }
    if ((p.name === type) !== (best.name === type)) { if (p.name === type) best = p; continue; }
    if (p.name < best.name) best = p;
  }
  return best?.name ?? 'default';
}

/** The skills a profile pre-selects (skills/list's defaultFor). */
export function defaultSkills(profile: string, skills: Pick<Skill, 'name' | 'defaultFor'>[]): string[] {
  return skills.filter((s) => (s.defaultFor ?? []).includes(profile)).map((s) => s.name);
}

/** A path as a person reads it: relative to the repository, else to the home directory. */
export function shortPath(p: string, root?: string, home?: string): string {
  const under = (dir: string | undefined) => !!dir && (p === dir || p.startsWith(dir.replace(/\/+$/, '') + '/'));
  if (under(root)) return p.slice(root!.replace(/\/+$/, '').length + 1) || '.';
  if (under(home)) return '~/' + p.slice(home!.replace(/\/+$/, '').length + 1);
  return p;
}

/**
 * A skill file that did not load, in a line: "path:line: what is wrong",
 * the path relative to the repository (or ~), the message without the
 * absolute path familiar starts it with.
 */
export function skillErrorText(e: SkillError, root?: string, home?: string): string {
  let msg = e.message;
  for (const prefix of [`${e.path}:${e.line ?? ''}:`, `${e.path}:`]) {
    if (msg.startsWith(prefix)) { msg = msg.slice(prefix.length).trim(); break; }
  }
  return `${shortPath(e.path, root, home)}${e.line ? `:${e.line}` : ''}: ${msg}`;
}

/** One server's check in words: "filesystem: ready" or "github: cannot start: …". */
export function mcpCheckText(c: McpServerCheck): string {
  if (c.available) return c.problem ? `${c.name}: ready, but ${c.problem}` : `${c.name}: ready`;
  return `${c.name}: cannot start: ${c.problem || 'familiar could not tell why'}`;
}

/** The servers New Task's chosen presets add (task/create mcpServers), absent when none. */
export function presetServers(names: string[], presets: McpPreset[]): Record<string, McpServer> | undefined {
  const out: Record<string, McpServer> = {};
  for (const n of names) {
    const p = presets.find((x) => x.name === n);
    if (p) out[n] = p.server;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * A server/message as the person reads it: "task <id>: …" names the task
 * by its title. Which messages the extension shows otherwise: the one of
 * initialize about a missing claude is shown by its own warning, with its
 * actions; every other warning is shown, those about claude too (an MCP
 * server that failed inside claude was hidden by a filter on "claude").
 */
export function serverMessage(text: string, titleOf: (id: string) => string | undefined): { text: string; shownElsewhere: boolean } {
  const shownElsewhere = /^claude is not available, so tasks cannot start/.test(text);
  const m = /^task (\S+): /.exec(text);
  const title = m ? titleOf(m[1]) : undefined;
  return { text: title ? `"${title}": ${text.slice(m![0].length)}` : text, shownElsewhere };
}
