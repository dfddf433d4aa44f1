import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { canSetMode, defaultSkills, loginWords, modelChoices, mcpCheckText, modeChoices, presetServers, profileFor, serverMessage, shortPath, skillErrorText } from '../src/controls';
import { createParams, Draft } from '../src/draft';
import { hookTitle, itemView, Transcript } from '../src/transcript';
import type { McpPreset, Profile } from '../src/protocol';

const draft: Draft = { title: 'T', description: 'd', type: 'implement', mode: 'executor', profile: '', skills: [], criteria: '', priority: 0, files: [], notes: '' };

test('skills untouched are left to familiar (the profile defaults); touched are sent, even none', () => {
  assert.equal('skills' in createParams(draft), false);
  assert.deepEqual(createParams({ ...draft, skillsTouched: true }).skills, []);
  assert.deepEqual(createParams({ ...draft, skillsTouched: true, skills: ['relnotes'] }).skills, ['relnotes']);
  // A draft saved before skillsTouched existed keeps its pick.
  assert.deepEqual(createParams({ ...draft, skills: ['go'] }).skills, ['go']);
});

test('directives only when one is on; presets become the task\'s servers', () => {
  assert.equal('directives' in createParams({ ...draft, directives: { think: false } }), false);
  assert.deepEqual(createParams({ ...draft, directives: { elevated: true, verbose: false } }).directives, { elevated: true });
  const presets: McpPreset[] = [{ name: 'filesystem', server: { type: 'stdio', command: 'npx', args: ['x'] } as any, requires: ['npx'] }];
  assert.deepEqual(createParams({ ...draft, mcpPresets: ['filesystem', 'gone'] }, presets).mcpServers, { filesystem: presets[0].server });
  assert.equal('mcpServers' in createParams({ ...draft, mcpPresets: [] }, presets), false);
  assert.equal(presetServers(['gone'], presets), undefined);
});

test('the profile a type gets, as familiar resolves it', () => {
  const ps: Pick<Profile, 'name' | 'taskTypes' | 'source'>[] = [
    { name: 'default', taskTypes: ['custom'], source: 'builtin' },
    { name: 'fix', taskTypes: ['fix'], source: 'builtin' },
    { name: 'bugs', taskTypes: ['fix'], source: 'builtin' },
    { name: 'ours', taskTypes: ['refactor'], source: 'workspace' },
    { name: 'refactor', taskTypes: ['refactor'], source: 'builtin' },
  ];
  assert.equal(profileFor('', 'fix', ps), 'fix');
  assert.equal(profileFor('', 'refactor', ps), 'ours');
  assert.equal(profileFor('', 'test', ps), 'default');
  assert.equal(profileFor('bugs', 'fix', ps), 'bugs');
  assert.deepEqual(defaultSkills('fix', [{ name: 'a', defaultFor: ['fix'] }, { name: 'b' }, { name: 'c', defaultFor: ['x', 'fix'] }]), ['a', 'c']);
});

test('skill errors name the file relative to the repository, and the line', () => {
  assert.equal(skillErrorText({ path: '/r/.familiar/skills/x/SKILL.md', line: 3, message: '/r/.familiar/skills/x/SKILL.md:3: no description' }, '/r', '/h'),
    '.familiar/skills/x/SKILL.md:3: no description');
  assert.equal(skillErrorText({ path: '/h/.config/familiar/skills/y.md', message: '/h/.config/familiar/skills/y.md: unreadable' }, '/r', '/h'),
    '~/.config/familiar/skills/y.md: unreadable');
  assert.equal(shortPath('/rest/x', '/r', '/h'), '/rest/x');
});

test('modes: choices in words, set while the task has not ended', () => {
  const c = modeChoices('auditor');
  assert.deepEqual(c.map((x) => x.mode), ['executor', 'architect', 'auditor']);
  assert.ok(c[2].current && /\(now\)/.test(c[2].description) && /refused without asking/.test(c[2].description));
  assert.ok(canSetMode('running') && canSetMode('merging') && !canSetMode('merged') && !canSetMode('cancelled'));
});

test('MCP checks in words; a warning about claude is shown, the missing claude is not twice', () => {
  assert.equal(mcpCheckText({ name: 'fs', available: true }), 'fs: ready');
  assert.equal(mcpCheckText({ name: 'gh', available: false, problem: 'GITHUB_PERSONAL_ACCESS_TOKEN is not set' }), 'gh: cannot start: GITHUB_PERSONAL_ACCESS_TOKEN is not set');
  const titles = (id: string) => (id === 't1' ? 'Fix it' : undefined);
  assert.deepEqual(serverMessage('task t1: an MCP server failed to start in claude: broken', titles),
    { text: '"Fix it": an MCP server failed to start in claude: broken', shownElsewhere: false });
  assert.equal(serverMessage('task zz: x', titles).text, 'task zz: x');
  assert.equal(serverMessage('claude is not available, so tasks cannot start: not found', titles).shownElsewhere, true);
});

test('a verbose task\'s hook calls are rows, once each', () => {
  const tr = new Transcript();
  tr.add({ kind: 'prompt', at: '2026-01-01T00:00:00Z', text: 'go' } as any, 5);
  const it = tr.hook({ name: 'PreToolUse', payload: { tool_name: 'Bash', tool_input: { command: 'go test ./...' } } }, 6);
  assert.ok(it);
  assert.equal(tr.hook({ name: 'PreToolUse', payload: {} }, 6), undefined);
  assert.equal(tr.items.length, 2);
  const v = itemView(it!);
  assert.equal(v.kind, 'hook');
  assert.equal(v.text, 'PreToolUse — Bash: go test ./...');
  assert.match(v.input!, /"command": "go test/);
  assert.equal(hookTitle({ name: 'UserPromptSubmit', payload: { prompt: 'fix\nthe bug' } }), 'UserPromptSubmit — fix the bug');
  assert.equal(hookTitle({ name: 'Stop', payload: null }), 'Stop');
});

test('issue 36: which login the agents use, in words, never a secret; the models New Task offers', () => {
  assert.equal(loginWords({ method: 'claude_login' }), 'your Claude subscription (claude login)');
  assert.equal(loginWords({ method: 'api_key', source: 'ANTHROPIC_API_KEY' }), 'API key from ANTHROPIC_API_KEY');
  assert.equal(loginWords({ method: 'api_key' }), 'API key from ANTHROPIC_API_KEY');
  assert.equal(loginWords({ method: 'oauth_token', source: 'CLAUDE_CODE_OAUTH_TOKEN' }), 'a Claude subscription token from CLAUDE_CODE_OAUTH_TOKEN');
  assert.equal(loginWords({ method: 'bedrock' }), 'Amazon Bedrock (your AWS credentials)');
  assert.match(loginWords({ method: 'none' }), /^no login/);
  assert.equal(loginWords({ method: 'api_key', source: 'ANTHROPIC_API_KEY', problem: 'the key was refused' }), 'API key from ANTHROPIC_API_KEY — the key was refused');
  assert.equal(loginWords(undefined), '');
  assert.deepEqual(modelChoices.map(([v]) => v), ['', 'sonnet', 'opus', 'haiku', 'opusplan']);
});
