/**
 * Runs one claimed admission of a local session through the agent runtime: the frozen policy from
 * the validated receipt, the stored history (with any tool call a crash left open closed first), the
 * session's toolsets, and its model — then reports how the turn ended so the scheduler can settle it.
 *
 * The agent is created lazily here, at the first turn (LOC-1): nothing before this touches a model.
 */
import { AgentCache, type AgentLease } from '../agents/agent-cache.js';
import { runTurn, type TurnEnding, type TurnResult } from '../../runtime/runner.js';
import { closeDanglingToolCalls } from '../../runtime/transcript-repair.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { WireMessage } from '../../runtime/model/wire.js';
import type {
  CompressionReason,
  CompressOutcome,
  ContextSettings,
  TurnContext,
} from '../../runtime/context/budget.js';
import type { PromptHost, ToolDefinition, TurnEvent } from '../../runtime/types.js';
import { guardTools } from '../../runtime/tool-guards.js';
import { SPAN } from '../../runtime/tracing.js';
import type { LifecycleScope, TurnLifecycle } from '../../runtime/lifecycle/session-lifecycle.js';
import type { SessionStore } from '../ports/session-store.js';
import type { TranscriptMessage } from '../vocabulary.js';
import { turnUsage } from '../session/usage.js';
import type { BudgetGuard } from '../budget/guard.js';
import { LOCAL_BUDGET_HINT } from './budgets.js';
import type { ModelPrice } from '../../runtime/model/pricing.js';
import { localSessionKey } from './receipt.js';
import type { LaunchPolicy } from './launch-policy.js';
import type { HomeChannel } from '../session/context.js';
import type { CreationReceipt } from './receipt.js';
import type { TurnJob, TurnJobResult } from './scheduler.js';
import {
  RECOVERY_DEFAULTS,
  recordingPrompts,
  resumeAt,
  splitAtInput,
  type ResumePoint,
  type RunningToolPolicy,
} from '../session/step-resume.js';

export interface TurnJobDeps {
  sessions: SessionStore;
  prompts: PromptHost;
  /**
   * The tools of a session's toolsets (already validated at creation); `policy` decides where they
   * run (a safe_mode session's tools run in its isolated worker).
   */
  tools(
    toolsets: readonly string[],
    policy?: LaunchPolicy,
    logicalId?: string,
  ): ToolDefinition[] | Promise<ToolDefinition[]>;
  /** The model client for a policy; `apiKey` is the creator's in-memory key, when one was given. */
  model(policy: LaunchPolicy, apiKey: string | undefined): ChatModel;
  /** The receipt validated for this epoch (validating it now if need be), or null when paused. */
  receipt(logicalId: string): CreationReceipt | null | Promise<CreationReceipt | null>;
  apiKey(logicalId: string): string | undefined;
  publish(logicalId: string, event: TurnEvent | { type: string; [field: string]: unknown }): void;
  /** Called once a session's agent exists in this process (lazy-agent status for session.info). */
  agentStarted(logicalId: string): void;
  /** CTX-1: the chat platforms connected now and the home channels; absent: only `local`. */
  platforms?: () => PlatformFacts;
  /** Named test-only fault points (crash tests); inert in production. */
  fault(point: string): void;
  /** The sessions' live agents between turns (AGC-1); absent: every turn loads from the store. */
  agents?: AgentCache;
  /** The model's context budget for a policy; without it turns never compress. */
  contextSettings?: (policy: LaunchPolicy) => ContextSettings;
  /**
   * Compresses the session in the turn's slot (compression.ts); `model` is the turn's own (budget-
   * guarded), so the summary's calls are reserved and settled like the turn's.
   */
  compress?: (
    logicalId: string,
    reason: CompressionReason,
    signal: AbortSignal,
    model: ChatModel,
  ) => Promise<CompressOutcome>;
  /** Checkpoints and hooks around the turn and its tool calls (runtime/lifecycle/); absent: none. */
  lifecycle?: (policy: LaunchPolicy, scope: LifecycleScope) => Promise<TurnLifecycle>;
  /** `recovery.running_tool`: how a resumed turn treats the tool that was running at the crash. */
  runningTool?: RunningToolPolicy;
  /** The budget guard every model call passes (docs/cost.md, "Budgets"), and the price of a policy's model. */
  budget?: { guard: BudgetGuard; price(policy: LaunchPolicy): ModelPrice | null };
}

/** What a local session's context says of the chat platforms (CTX-1). */
export interface PlatformFacts {
  readonly connected: readonly string[];
  readonly homes: readonly HomeChannel[];
}

/** The context's platform lines: the platforms actually connected, and where scheduled output goes. */
export function platformLines(facts: PlatformFacts): string[] {
  const lines = [`Connected platforms: ${['local', ...facts.connected].join(', ')}`];
  if (facts.homes.length === 0) return [...lines, 'Home channels for scheduled output: none configured'];
  lines.push('Home channels for scheduled output:');
  for (const home of facts.homes) {
    const label = home.chat_name
      ? `${home.chat_name} (chat ID: ${home.chat_id})`
      : `chat ID: ${home.chat_id}`;
    lines.push(
      `- ${home.platform}: ${label} (a scheduled job delivers there with deliver: home:${home.platform})`,
    );
  }
  return lines;
}

/**
 * The system prompt: byte-identical on every turn of a session (prompt-cache friendly) while the
 * gateway's platforms stay as they are.
 */
export function systemPromptFor(
  receipt: CreationReceipt,
  platforms: PlatformFacts = { connected: [], homes: [] },
): string {
  const policy = receipt.policy;
  const parts = [
    'You are an agent running inside Gatehouse, a session gateway. Use the tools you are given when they help.',
    [
      '## Current Session Context',
      '',
      `Source: local ${policy.source} session (platform ${policy.platform})`,
      `Working directory: ${policy.cwd}`,
      ...platformLines(platforms),
      // pass_session_id: the agent may quote its logical id (stable across compression and reset).
      ...(policy.pass_session_id ? [`Session id: ${receipt.logical_id}`] : []),
    ].join('\n'),
  ];
  if (policy.coding_context === 'focus') {
    parts.push(
      'The working directory is a code workspace: focus on the code, and keep changes minimal and tested.',
    );
  }
  // Rendered at creation (launch-context.ts) and frozen in the receipt.
  for (const section of [
    policy.personal_prompt,
    policy.rules_prompt,
    policy.skills_prompt,
    policy.available_skills_prompt,
  ])
    if (section) parts.push(section);
  return parts.join('\n\n');
}

export function makeTurnJobRunner(deps: TurnJobDeps): (job: TurnJob) => Promise<TurnJobResult> {
  // Without a shared cache, one that keeps nothing: every turn builds its agent from the store.
  const agents =
    deps.agents ??
    new AgentCache({
      source: deps.sessions,
      limits: { maxSize: 0, idleTtlMs: 0, maxEvictionsPerPass: 0, protectRecent: 0 },
    });
  return async (job) => {
    const logicalId = job.session.logical_id;
    const receipt = await deps.receipt(logicalId);
    if (!receipt)
      return { outcome: 'failed', detail: 'session_paused: the creation receipt did not validate' };
    const policy = receipt.policy;
    const apiKey = deps.apiKey(logicalId);
    const publish = (event: TurnEvent | { type: string; [field: string]: unknown }): void =>
      deps.publish(logicalId, event);

    if (policy.requires_api_key && apiKey === undefined) {
      const message =
        'this session was created with an api_key, which is held only in memory and was lost when the daemon ' +
        'restarted (in a cluster: when the instance holding it stopped); repeat session.create with the same ' +
        'request_id and the api_key to supply it again';
      publish({
        type: 'turn.complete',
        admission_id: job.admission.admission_id,
        outcome: 'failed',
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          total_tokens: 0,
        },
        final_text: null,
        error: { reason: 'launch_credentials_unavailable', message },
      });
      return { outcome: 'failed', detail: `launch_credentials_unavailable: ${message}` };
    }

    // A compression inside the turn moves the session to its child transcript: later writes follow,
    // and the cached agent (which holds the old transcript) is dropped.
    const startedOn = receipt.current_session_id;
    let physicalId = startedOn;
    // Before anything this turn writes after its claim (the repair below is the first such write).
    deps.fault('turn.claimed');
    const agent = await agentFor(
      agents,
      deps,
      logicalId,
      physicalId,
      // MCP servers are started here, lazily, at the first turn that needs their tools.
      {
        systemPrompt: systemPromptFor(receipt, deps.platforms?.()),
        tools: await deps.tools(policy.toolsets, policy, logicalId),
      },
      // A resumed turn's open calls are its own next steps, not a crash's leftovers to close.
      job.resumed ? { kind: 'before_input', admissionId: job.input.admission_id } : { kind: 'read' },
    );
    deps.agentStarted(logicalId);
    const compress = deps.compress;
    const admissionId = job.admission.admission_id;
    const model = deps.budget
      ? deps.budget.guard.guard(deps.model(policy, apiKey), {
          sessionKey: localSessionKey(logicalId),
          principal: job.admission.submitter.subject,
          turnId: admissionId,
          sessionLimit: policy.budget ?? null,
          price: deps.budget.price(policy),
          hint: LOCAL_BUDGET_HINT,
          emit: (event) => publish({ ...event, admission_id: admissionId }),
        })
      : deps.model(policy, apiKey);
    const context: TurnContext | undefined =
      deps.contextSettings && compress
        ? {
            settings: deps.contextSettings(policy),
            compress: async (reason, signal) => {
              const outcome = await compress(logicalId, reason, signal, model);
              physicalId = (await deps.receipt(logicalId))?.current_session_id ?? physicalId;
              // The runner goes on with the compressed view; the cache's copy is of the old one.
              if (outcome.kind === 'compressed' || physicalId !== startedOn) agents.invalidate(logicalId);
              return outcome;
            },
          }
        : undefined;

    // The claim stored the input, and the settlement stores the final answer with the usage in one
    // commit: a plain turn costs two durable commits after its admission, shared with other sessions.
    let settled = false;
    let result: TurnEnding;
    const turn = historyOf(agent, job.input);
    let resumePoint: ResumePoint | null = null;
    try {
      if (job.resumed) {
        // Only the turn's own calls may be open: anything else left open before it is not its to run.
        const clean = turn.found && closeDanglingToolCalls(turn.history).added.length === 0;
        resumePoint = clean
          ? await resumeAt(
              {
                turnId: job.admission.admission_id,
                toolStarted: job.admission.tool_started,
                prompt: job.admission.prompt,
              },
              turn.turn,
              deps.runningTool ?? RECOVERY_DEFAULTS.runningTool,
              (messages) => job.steps.toolResult(messages),
            )
          : null;
        if (resumePoint === null) {
          agent.release();
          // The next turn reads the transcript afresh, so whatever this one left open is closed.
          agents.invalidate(logicalId);
          return {
            outcome: 'failed',
            detail: 'resume_inconsistent: the stored turn does not match its step record; it was not resumed',
          };
        }
        job.trace
          ?.child(SPAN.resume, {
            'gatehouse.resume.step': resumePoint.step,
            'gatehouse.resume.closed_tool_call_id': resumePoint.closed,
            'gatehouse.turn.resumes': job.admission.resumes,
          })
          .end();
        publish({
          type: 'turn.resumed',
          admission_id: job.admission.admission_id,
          execution_generation: job.generation,
          step: resumePoint.step,
          resumes: job.admission.resumes,
          closed_tool_call_id: resumePoint.closed,
        });
      }
    } catch (error) {
      agent.release();
      throw error;
    }
    let currentCall: string | null = null;
    const prompts = recordingPrompts(
      deps.prompts,
      (prompt) => job.steps.prompt(prompt),
      job.admission.prompt,
      () => currentCall,
    );
    try {
      const lifecycle = deps.lifecycle
        ? await deps.lifecycle(policy, { sessionId: logicalId, admissionId, cwd: policy.cwd, publish })
        : null;
      const startNotes = lifecycle ? await lifecycle.turnStart(job.signal) : [];
      result = await runTurn({
        sessionId: logicalId,
        admissionId: job.admission.admission_id,
        executionGeneration: job.generation,
        model,
        modelName: policy.model,
        systemPrompt: agent.systemPrompt,
        tools: guardTools(agent.tools, lifecycle?.guards ?? []),
        cwd: policy.cwd,
        yolo: policy.yolo,
        maxTurns: policy.max_turns,
        reasoning: policy.reasoning ?? undefined,
        history: turn.history,
        wireHistory: turn.wireHistory,
        ...(resumePoint ? { resume: { turn: resumePoint.turn, calls: resumePoint.calls } } : {}),
        markToolStarted: (call) => job.steps.toolStarted(call.id),
        steers: async () => {
          const applied = await job.steps.steers();
          if (applied.length > 0) deps.fault('steer.applied');
          return applied;
        },
        ...(job.trace ? { trace: job.trace } : {}),
        ...(context ? { context } : {}),
        input: job.input,
        inputStored: true,
        commitFinal: async (messages, end) => {
          // Hook failures outside a tool call are stored with the turn's end, before its last words.
          const endNotes = lifecycle ? await lifecycle.turnEnd(end, new AbortController().signal) : [];
          const notes = [...startNotes, ...endNotes].map((content): TranscriptMessage => ({
            role: 'system',
            content,
            admission_id: admissionId,
          }));
          const all = [...notes, ...messages];
          const accepted = await job.settle({ ...settlement(end), messages: all, usage: turnUsage(end) });
          settled = true;
          for (const message of notes) publish({ type: 'message.stored', message });
          if (!accepted) throw new Error('the turn no longer owns its admission (stale generation)');
        },
        transcript: {
          append: async (_sessionId, messages) => {
            const stamped = messages.map((m) => ({ ...m, admission_id: job.admission.admission_id }));
            if (messages.some((m) => m.role === 'tool')) {
              // A tool result clears the tool's started mark in the same commit (REC-7).
              deps.fault('tool.result');
              await job.steps.toolResult(stamped);
              return;
            }
            await deps.sessions.appendToTranscript(
              physicalId,
              messages.map((m) => ({ ...m, admission_id: job.admission.admission_id })),
            );
          },
        },
        prompts,
        signal: job.signal,
        emit: (event) => {
          if (event.type === 'tool.start') currentCall = event.tool_call_id;
          publish(
            event.type === 'turn.complete' ? { ...event, admission_id: job.admission.admission_id } : event,
          );
        },
      });
    } finally {
      agent.release();
      // The turn moved to another transcript (a compression): never serve the old one again.
      if (physicalId !== startedOn) agents.invalidate(logicalId);
    }
    if (settled) return settlement(result);
    return { ...settlement(result), usage: turnUsage(result) };
  };
}

/**
 * Which tool calls a crash (or a failed write) left open agentFor closes:
 * - `read`: a fresh turn closes any in what this acquire read (everything before it was checked when
 *   it was read);
 * - `before_input`: a resumed turn closes those before its input only; its own open calls are its
 *   next steps (REC-7). Such a call is there when the crash came between the turn's claim (which
 *   stored the input after it) and the repair the fresh turn would have made next.
 */
type Repair = { kind: 'read' } | { kind: 'before_input'; admissionId: string | undefined };

/**
 * The session's agent caught up with the store, with the calls `repair` names closed first. A
 * repair is persisted before the turn goes on, then read back.
 */
async function agentFor(
  agents: AgentCache,
  deps: TurnJobDeps,
  logicalId: string,
  physicalId: string,
  setup: { systemPrompt: string; tools: ToolDefinition[] },
  repair: Repair,
): Promise<AgentLease> {
  const agent = await agents.acquire(logicalId, physicalId, setup);
  const write = repairOf(agent, repair);
  if (!write) return agent;
  try {
    if (write.kind === 'append') await deps.sessions.appendToTranscript(physicalId, write.messages);
    else await deps.sessions.rewriteTranscript(physicalId, write.messages);
  } finally {
    agent.release();
  }
  return agents.acquire(logicalId, physicalId, setup);
}

/** The write that closes the open calls `repair` names, or null when none is open. */
function repairOf(
  agent: AgentLease,
  repair: Repair,
): { kind: 'append' | 'rewrite'; messages: TranscriptMessage[] } | null {
  if (repair.kind === 'read') {
    const open = closeDanglingToolCalls(agent.appended);
    if (open.added.length === 0) return null;
    if (open.appendable) return { kind: 'append', messages: open.added };
    return { kind: 'rewrite', messages: closeDanglingToolCalls(agent.messages).repaired };
  }
  // Without its input the turn is not resumed at all (historyOf's `found`): nothing to repair.
  const split = repair.admissionId === undefined ? null : splitAtInput(agent.messages, repair.admissionId);
  if (!split) return null;
  const before = closeDanglingToolCalls(agent.messages.slice(0, split.before));
  if (before.added.length === 0) return null;
  return { kind: 'rewrite', messages: [...before.repaired, ...agent.messages.slice(split.before)] };
}

/**
 * The history before this turn, and its wire form: the stored transcript ends with the input its
 * claim stored, or (a resumed turn) with the input and what the turn stored after it (`turn`).
 * Copies of the cached arrays (a pointer copy), so the turn cannot change the cache.
 */
function historyOf(
  agent: AgentLease,
  input: TranscriptMessage,
): { history: TranscriptMessage[]; wireHistory: WireMessage[]; turn: TranscriptMessage[]; found: boolean } {
  const split = input.admission_id === undefined ? null : splitAtInput(agent.messages, input.admission_id);
  const end = split?.before ?? agent.messages.length;
  return {
    history: agent.messages.slice(0, end),
    wireHistory: agent.wire.slice(0, end),
    turn: split?.turn ?? [],
    found: split !== null,
  };
}

function settlement(result: TurnResult): { outcome: TurnResult['outcome']; detail: string | null } {
  const detail = result.error ? `${result.error.reason}: ${result.error.message}` : null;
  return { outcome: result.outcome, detail };
}
