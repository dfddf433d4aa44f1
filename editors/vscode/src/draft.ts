// New Task's draft and the task/create params it makes. Pure, for the fast tests.

import type { Directives, McpPreset, Mode, TaskCreateParams, TaskType } from './protocol';
import { presetServers } from './controls';

/** What the form holds; the draft kept between openings. */
export interface Draft {
  title: string;
  description: string;
  type: TaskType;
  mode: Mode;
  profile: string;
  skills: string[];
  /**
   * The person changed the skills: skills is their choice (even none).
   * Untouched, the task is created without skills and familiar gives it
   * its profile's defaults (the form shows them pre-selected).
   */
  skillsTouched?: boolean;
  directives?: Directives;
  /** Names of familiar's MCP presets (mcp/presets) this task adds to the session's servers. */
  mcpPresets?: string[];
  criteria: string;
  priority: number;
  /** task/create's model: an alias the CLI takes ("sonnet", "opus"), "" for claude's own choice. */
  model?: string;
  files: string[];
  notes: string;
}

/** The task/create params of a form's draft: criteria one per line, empty fields left out. */
export function createParams(d: Draft, presets: McpPreset[] = []): TaskCreateParams {
  const title = d.title.trim();
  const p: TaskCreateParams = {
    title,
    // Kept as typed (newlines included); a task needs a description, and the title says it when empty.
    description: d.description.trim() ? d.description.replace(/\s+$/, '') : title,
    type: d.type,
    mode: d.mode,
    acceptanceCriteria: d.criteria.split('\n').map((s) => s.replace(/^\s*[-*]\s+/, '').trim()).filter(Boolean),
  };
  if (d.profile) p.profile = d.profile;
  if (d.skillsTouched || d.skills.length) p.skills = d.skills;
  const dir: Directives = {};
  for (const k of ['think', 'verbose', 'elevated'] as const) if (d.directives?.[k]) dir[k] = true;
  if (Object.keys(dir).length) p.directives = dir;
  const mcp = presetServers(d.mcpPresets ?? [], presets);
  if (mcp) p.mcpServers = mcp;
  if (d.priority) p.priority = d.priority;
  if (d.model) p.model = d.model;
  if (d.files.length || d.notes) p.hints = { ...(d.files.length ? { files: d.files } : {}), ...(d.notes ? { notes: d.notes } : {}) };
  return p;
}
