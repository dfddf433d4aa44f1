// The types of familiar's JSON-RPC protocol (PROTOCOL.md, version 1, plus
// familiar's additions in protocol/), as far as the extension uses them.

export type Status = 'queued' | 'starting' | 'running' | 'waiting' | 'paused' | 'merging' | 'merged' | 'blocked' | 'cancelled';
export type Activity = 'thinking' | 'writing' | 'running_command' | 'idle' | 'unknown';
export type Mode = 'executor' | 'architect' | 'auditor';
export type TaskType = 'implement' | 'fix' | 'refactor' | 'test' | 'custom';
export type Driver = 'pty' | 'stream';
export type MergeStrategy = 'merge' | 'squash' | 'rebase';

export interface Option { id: string; label: string }

export interface Question {
  id: string;
  kind: 'permission' | 'choice' | 'question' | 'dialog';
  text: string;
  tool?: string;
  input?: any;
  options: Option[];
  allowText: boolean;
  expiresAt?: string;
  /** familiar's addition: several options may be picked (answer with their ids joined with ","). */
  multiSelect?: boolean;
}

export interface ChangedFile { path: string; status: 'added' | 'modified' | 'deleted' | 'renamed'; oldPath?: string }

export interface TaskResult {
  success: boolean;
  summary: string;
  changedFiles: ChangedFile[];
  commits: { sha: string; subject: string }[];
  costUsd?: number;
  /** familiar's addition: the task finished having changed nothing (nothing to merge, whatever its status). */
  noChanges?: boolean;
  truncated?: boolean;
  originalSize?: number;
  summaryRef?: string;
}

export type BlockedReason = 'timeout' | 'agent_failed' | 'agent_exited' | 'start_failed' | 'interrupted' | 'cancelled_by_user'
  | 'auth' | 'api_error' | 'usage_limit' | 'budget';

/** Why a task could not finish; status (an api_error's HTTP status) and resetsAt (a usage limit's) are familiar's additions. */
export interface Blocked { reason: BlockedReason | string; detail: string; status?: number; resetsAt?: string }

export interface Task {
  id: string;
  title: string;
  description: string;
  acceptanceCriteria: string[];
  type: TaskType;
  profile: string;
  mode: Mode;
  priority: number;
  driver: Driver;
  status: Status;
  activity: Activity;
  queuePosition?: number;
  estimatedStartSec?: number;
  worktree?: { path: string; branch: string; baseRef: string; baseCommit: string };
  agent?: { pid: number; sessionId: string; claudeVersion: string };
  pendingQuestion?: Question;
  result?: TaskResult;
  blocked?: Blocked;
  attempt: number;
  previousAttemptId?: string;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  updatedAt: string;
}

export interface Policy { default: 'ask' | 'allow' | 'deny'; allow?: string[]; deny?: string[] }

export interface SettingsUpdate {
  maxConcurrent?: number;
  defaultDriver?: Driver;
  approvalTimeoutSec?: number;
  permissionPolicy?: Policy;
  agentNice?: number;
}

export interface InitializeResult {
  serverInfo: { name: string; version: string };
  protocolVersion: number;
  capabilities: { drivers: Driver[] };
  workspace: { root: string; dataDir: string; worktreesDir: string };
  claude: { available: boolean; path: string; version: string; problem?: string };
  git: { available: boolean; version: string };
}

export interface TaskCreateParams {
  title: string;
  description: string;
  acceptanceCriteria?: string[];
  type?: TaskType;
  mode?: Mode;
  driver?: Driver;
  hints?: { files?: string[]; notes?: string };
}

/** ended (familiar's addition): no agent writes this log any more, so size is final. */
export interface OutputPage { data: string; offset: number; nextOffset: number; size: number; truncated: boolean; ended?: boolean }
export interface DiffResult { files: { path: string; status: string; additions: number; deletions: number }[]; patch: string }
export interface Event { seq: number; method: string; params: any }

export interface TaskUpdated { seq: number; task: Task }
export interface TaskOutput { seq: number; id: string; data: string }
export interface TaskQuestion { seq: number; id: string; question: Question }
export interface TaskQuestionResolved { seq: number; id: string; questionId: string; decidedBy: string; optionId?: string }
/**
 * Every end of a task: success (status merging or merged), or, from familiar's
 * issue-22 servers on, a failure (result.success false; status blocked, or
 * cancelled by anything but the person). status, reason, detail and resetsAt
 * are familiar's additions; an older familiar sends only seq, id and result,
 * and only on success.
 */
export interface TaskCompleted {
  seq: number;
  id: string;
  result: TaskResult;
  status?: Status;
  /** The blocked reason, or "cancelled"; empty on success. */
  reason?: BlockedReason | 'cancelled' | string;
  /** A sentence a person can act on. */
  detail?: string;
  /** When a usage limit resets (RFC 3339). */
  resetsAt?: string;
}
export interface ServerMessage { seq: number; level: 'info' | 'warning' | 'error'; text: string }

export const Code = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  ServerNotInitialized: -32002,
  RequestCancelled: -32800,
  NotFound: -32001,
  FailedPrecondition: -32003,
  Conflict: -32004,
  Unavailable: -32005,
} as const;
