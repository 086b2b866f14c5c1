/** The wire shapes the page reads (docs/rpc-methods.md). Only the fields the page uses. */

export interface Message {
  id?: number;
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
  reasoning?: string;
  admission_id?: string;
  /** A steer applied in the turn: the steer's own admission id. */
  steer_id?: string;
  timestamp?: string;
}

export interface Prompt {
  type: 'approval.request' | 'clarify.request';
  prompt_id: string;
  execution_generation: number;
  command?: string;
  /** What `session` and `always` would approve (approval requests of commands). */
  scope?: string;
  reason?: string;
  kind?: string;
  choices?: string[] | null;
  question?: string;
  multi_select?: boolean;
}

export interface PendingAdmission {
  admission_id: string;
  submission_id: string;
  state: 'queued' | 'running' | 'unknown';
  text?: string;
  execution_generation?: number | null;
}

export interface SessionInfo {
  session_id: string;
  source: string;
  platform: string | null;
  model: string | null;
  provider?: string | null;
  cwd: string | null;
  toolsets: string[] | null;
  title: string | null;
  created_at: string;
  /** The editor an acp session was opened from, when the gateway reports one. */
  editor?: string | null;
}

export interface Snapshot {
  session_id: string;
  messages: Message[];
  messages_truncated?: boolean;
  state: string;
  paused_reason: string | null;
  running: { admission_id: string; generation: number } | null;
  pending_admissions: PendingAdmission[];
  prompts: Prompt[];
  execution_generation: number;
  epoch: number;
  last_seq: number;
  info: SessionInfo;
}

export interface WireEvent {
  type: string;
  [field: string]: unknown;
}

export interface Sequenced {
  seq: number;
  event: WireEvent;
}

export interface ListedSession {
  session_id: string;
  kind: 'local' | 'platform';
  source: string;
  platform: string | null;
  model: string | null;
  title: string | null;
  state: string;
  created_at: string;
  last_activity: string;
  tokens: { input: number; output: number; total: number };
  /** What it has cost so far (docs/cost.md); `unknown`: some call had no price. */
  cost: { estimated_usd: number; status: 'reported' | 'estimated' | 'unknown' };
}
