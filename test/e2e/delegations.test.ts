/**
 * Background delegations through the real daemon on both stores (issue 28, docs/scheduling.md
 * "Background delegations"): started over RPC and by the model's `delegate` tool (approved through
 * the approval path), the child's result admitted into the parent exactly once; a child wider than
 * its parent refused; depth and per-session limits; stop, keep, a parent reset (QUE-2) and a parent
 * deleted; the documented CLI and chat lines; and a daemon SIGKILLed while children run or wait on
 * the global turn limit, after which each child's result (or its `unknown`) lands in the parent
 * once, even when the daemon dies again right after admitting it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { BACKENDS, nextEvent, resumeUntil } from './gateway-harness.js';
import { modelConfig, quiet, tempDir, useRecoveryRig, type Snapshot } from './recovery-harness.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { AuditRow } from '../../src/protocol/results.js';

const rig = useRecoveryRig();

interface Delegation {
  delegation_id: string;
  parent_session_id: string;
  child_session_id: string | null;
  task: string;
  state: string;
  outcome: string | null;
  detail: string | null;
  kept: boolean;
  depth: number;
  child_admission_id: string | null;
  result_admission_id: string | null;
}

/** What docs/scheduling.md ("Background delegations") shows, as written. */
const DOC = readFileSync(new URL('../../docs/scheduling.md', import.meta.url), 'utf8');
const SECTION = DOC.slice(DOC.indexOf('## Background delegations'), DOC.indexOf('## Tests only: the clock'));
const DOCUMENTED = JSON.parse(/^\{.*"method": "delegation\.start".*\}$/m.exec(SECTION)![0]) as {
  method: string;
  params: { session_id: string; request_id: string; task: string };
};
const DOC_ID = 'dlg_5e0c9a1f2b3d';
const DOC_ANSWER = JSON.parse(/^\{"delegation": .*\}$/m.exec(SECTION)![0]) as {
  delegation: Record<string, unknown>;
  duplicate: boolean;
};
const DOC_RESULT = /```text\n(Background delegation [\s\S]*?)\n```/.exec(SECTION)![1]!;
/** The documented `gatehouse delegations …` commands, as argument lists. */
const DOC_CLI = [...SECTION.matchAll(/^gatehouse (delegations .*)$/gm)].map((m) => m[1]!.split(' '));
const DOC_CHAT = /^printf '(.*)' \| gatehouse chat --resume <session id>$/m
  .exec(SECTION)![1]!
  .replaceAll('\\n', '\n');

/** A documented command with its placeholders filled in. */
function cli(args: string[], fill: Record<string, string>): string[] {
  const line = args.join(' ').replace(/<([a-z ]+)>/g, (_, name: string) => fill[name] ?? `<${name}>`);
  return line.split(' ');
}

const LIMITS = 'delegations: {max_depth: 1, max_per_session: 2}';

/** A child task that runs a command waiting until the test creates `<name>.go` in the cwd. */
const waitFor = (name: string) =>
  `run: touch ${name}.started; while [ ! -e ${name}.go ]; do sleep 0.05; done; echo ${name} done`;

async function parent(client: GatewayClient, cwd: string, yolo: boolean): Promise<string> {
  const { session_id } = await client.call<Snapshot>('session.create', {
    cwd,
    yolo,
    toolsets: ['terminal', 'clarify', 'delegation'],
  });
  await client.call('session.resume', { session_id });
  return session_id;
}

function start(client: GatewayClient, session_id: string, request_id: string, task: string, more = {}) {
  return client.call<{ delegation: Delegation; duplicate: boolean }>('delegation.start', {
    session_id,
    request_id,
    task,
    ...more,
  });
}

async function delegationOf(client: GatewayClient, id: string): Promise<Delegation> {
  const { delegations } = await client.call<{ delegations: Delegation[] }>('delegation.list', {});
  const found = delegations.find((d) => d.delegation_id === id);
  if (!found) throw new Error(`no delegation ${id} in delegation.list`);
  return found;
}

/** Reads the delegation until `done` holds (there is no event across processes for it). */
async function delegationUntil(
  client: GatewayClient,
  id: string,
  done: (d: Delegation) => boolean,
  timeoutMs = 30_000,
): Promise<Delegation> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const d = await delegationOf(client, id);
    if (done(d)) return d;
    if (Date.now() > end) throw new Error(`delegation ${id} did not get there: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the file exists: the child's command is running. */
async function fileAppears(path: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > end) throw new Error(`${path} never appeared`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Reads runtime.describe until the gateway's turn counts hold `done` (no event across processes). */
async function turnsUntil(
  client: GatewayClient,
  done: (turns: { running: number; waiting: number; limit: number }) => boolean,
): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const { gateway } = await client.call<{
      gateway: { turns: { running: number; waiting: number; limit: number } };
    }>('runtime.describe', {});
    if (done(gateway.turns)) return;
    if (Date.now() > end) throw new Error(`turns never got there: ${JSON.stringify(gateway.turns)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The parent's user messages that carry the delegation's result. */
function results(snap: Snapshot, id: string): Snapshot['messages'] {
  return snap.messages.filter(
    (m) => m.role === 'user' && m.content?.startsWith(`Background delegation ${id} `),
  );
}

/** The parent once its result of `id` was answered: quiet, with the result in its transcript. */
function reported(client: GatewayClient, sessionId: string, id: string): Promise<Snapshot> {
  return resumeUntil<Snapshot>(
    client,
    sessionId,
    (snap) => results(snap, id).length > 0 && snap.pending_admissions.length === 0,
    30_000,
  );
}

describe.each(BACKENDS)('background delegations on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('runs a child over RPC and by the delegate tool, admits each result once, refuses wider children and limits, stops, keeps, and a reset stops the rest', async () => {
    const demo = await rig.model();
    const d = await rig.daemon({ config: modelConfig(demo, LIMITS) });
    const client = await d.connect();
    const cwd = tempDir();
    const a = await parent(client, cwd, true);

    // Over RPC, the documented request: the child runs its task in the background; its answer
    // reaches the parent once.
    expect(DOCUMENTED.params).toMatchObject({ request_id: 'research-1', task: 'hello child' });
    const first = await client.call<{ delegation: Delegation; duplicate: boolean }>(DOCUMENTED.method, {
      ...DOCUMENTED.params,
      session_id: a,
    });
    expect(first.duplicate).toBe(false);
    // The answer has the documented shape: the same fields, with this delegation's values.
    expect(Object.keys(first.delegation)).toEqual(expect.arrayContaining(Object.keys(DOC_ANSWER.delegation)));
    expect(DOC_ANSWER).toMatchObject({
      duplicate: false,
      delegation: { state: 'running', task: 'hello child' },
    });
    expect(first.delegation).toMatchObject({ parent_session_id: a, state: 'running', depth: 1, kept: false });
    const id = first.delegation.delegation_id;
    const child = first.delegation.child_session_id!;
    let snap = await reported(client, a, id);
    const [result] = results(snap, id);
    expect(results(snap, id)).toHaveLength(1);
    expect(result!.content).toBe(DOC_RESULT.replace(DOC_ID, id));
    const done = await delegationOf(client, id);
    expect(done).toMatchObject({
      state: 'reported',
      outcome: 'completed',
      result_admission_id: result!.admission_id,
    });
    // The child is a session of its own, with the parent's policy; its task is its one turn.
    const childSnap = await client.call<Snapshot & { policy?: Record<string, unknown> }>('session.resume', {
      session_id: child,
    });
    expect(childSnap.messages.map((m) => m.content)).toEqual([
      'hello child',
      'Demo model (scripted stand-in): you said: hello child',
    ]);
    // Audited as a submit to the parent, with no text (auth.audit.message_text is off).
    const { rows } = await client.call<{ rows: AuditRow[] }>('audit.list', { session_id: a });
    expect(rows.filter((r) => r.detail?.['mode'] === 'delegation')).toMatchObject([
      { action: 'submitted', outcome: 'ok', detail: { request_id: 'research-1', mode: 'delegation' } },
    ]);
    // The same request id answers the same delegation and starts nothing more.
    const again = await start(client, a, 'research-1', 'hello child');
    expect(again).toMatchObject({ duplicate: true, delegation: { delegation_id: id, state: 'reported' } });
    snap = await quiet(client, a);
    expect(results(snap, id)).toHaveLength(1);

    // Never more powerful than the parent: each wider ask is refused by name, and nothing starts.
    const b = await parent(client, cwd, false);
    const before = (await client.call<{ delegations: Delegation[] }>('delegation.list', {})).delegations
      .length;
    for (const [more, field] of [
      [{ yolo: true }, 'yolo'],
      [{ toolsets: ['terminal', 'project'] }, 'toolsets'],
      [{ model: 'another-model' }, 'model'],
      [{ max_turns: 1000 }, 'max_turns'],
      [{ mcp_servers: ['fs'] }, 'mcp_servers'],
    ] as const) {
      await expect(start(client, b, `wide-${field}`, 'do more', more)).rejects.toMatchObject({
        reason: 'delegation_too_wide',
        details: { field },
      });
    }
    expect(
      (await client.call<{ delegations: Delegation[] }>('delegation.list', {})).delegations,
    ).toHaveLength(before);

    // Limits: a child may not delegate (max_depth 1); two going at once per session (max_per_session 2).
    await expect(start(client, child, 'deeper', 'go deeper')).rejects.toMatchObject({
      reason: 'delegation_limit',
      details: { limit: 'max_depth', max: 1 },
    });
    const stopMe = (await start(client, a, 'stop-me', waitFor('stop'))).delegation;
    const keepMe = (await start(client, a, 'keep-me', waitFor('keep'))).delegation;
    await expect(start(client, a, 'third', 'one too many')).rejects.toMatchObject({
      reason: 'delegation_limit',
      details: { limit: 'max_per_session', max: 2 },
    });
    await fileAppears(join(cwd, 'stop.started'));

    // The documented CLI: list this session's, stop one (its child's turn is interrupted, nothing is
    // reported), keep the other; then a reset of the parent (QUE-2) stops all but the kept one.
    const [listCmd, stopCmd, keepCmd] = DOC_CLI;
    expect(DOC_CLI.map((c) => c.slice(0, 2).join(' '))).toEqual([
      'delegations list',
      'delegations stop',
      'delegations keep',
    ]);
    const listed = await runCli(d.home, cli(listCmd!, { 'session id': a }));
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${id}  ${a} → ${child}  [reported: completed]`);
    expect(listed.stdout).toContain(`${stopMe.delegation_id}  ${a} → ${stopMe.child_session_id}  [running]`);
    const stoppedRun = await runCli(d.home, cli(stopCmd!, { 'delegation id': stopMe.delegation_id }));
    expect(stoppedRun).toMatchObject({ code: 0, stdout: `Stopped ${stopMe.delegation_id}.\n` });
    expect(await delegationOf(client, stopMe.delegation_id)).toMatchObject({
      state: 'stopped',
      outcome: 'stopped',
    });
    await quiet(client, stopMe.child_session_id!);
    expect(await delegationOf(client, stopMe.delegation_id)).toMatchObject({ state: 'stopped' });
    const unknownId = await runCli(d.home, ['delegations', 'stop', 'dlg_000000000000']);
    expect(unknownId.code).not.toBe(0);
    expect(unknownId.stderr).toContain(
      'no delegation dlg_000000000000 ("gatehouse delegations list" shows the ids)',
    );
    const keptRun = await runCli(d.home, cli(keepCmd!, { 'delegation id': keepMe.delegation_id }));
    expect(keptRun.code).toBe(0);
    expect(await delegationOf(client, keepMe.delegation_id)).toMatchObject({ kept: true });
    const dropped = (await start(client, a, 'reset-drops', waitFor('drop'))).delegation;
    await client.call('session.reset', { session_id: a, request_id: 'reset-1' });
    expect(await delegationUntil(client, dropped.delegation_id, (x) => x.state === 'stopped')).toMatchObject({
      detail: 'its parent session was reset',
    });
    writeFileSync(join(cwd, 'keep.go'), '');
    snap = await reported(client, a, keepMe.delegation_id);
    expect(results(snap, keepMe.delegation_id)).toHaveLength(1);
    expect(results(snap, keepMe.delegation_id)[0]!.content).toContain('keep done');
    // What was stopped never reached the parent.
    writeFileSync(join(cwd, 'stop.go'), '');
    writeFileSync(join(cwd, 'drop.go'), '');
    expect(results(snap, stopMe.delegation_id)).toEqual([]);
    expect(results(snap, dropped.delegation_id)).toEqual([]);

    // The model's tool, asked for approval as any command; approved once, it starts the delegation.
    const asked = nextEvent(client, 'approval.request', (e) => e.session_id === b);
    const turn = await client.call<{ admission_id: string }>('prompt.submit', {
      session_id: b,
      submission_id: 'delegate-1',
      text: 'call: delegate {"task": "from the tool", "toolsets": ["clarify"]}',
    });
    const request = (await asked).event;
    expect(request['command']).toBe('delegate: from the tool');
    await client.call('approval.respond', {
      session_id: b,
      prompt_id: request['prompt_id'],
      execution_generation: request['execution_generation'],
      choice: 'once',
    });
    const withResult = await resumeUntil<Snapshot>(client, b, (s) =>
      s.messages.some((m) => m.role === 'user' && m.content?.startsWith('Background delegation ')),
    );
    const toolResult = withResult.messages.find(
      (m) => m.role === 'tool' && m.admission_id === turn.admission_id,
    )!;
    const toolId = /Delegation (dlg_[0-9a-f]+) started in the background/.exec(toolResult.content!)![1]!;
    const fromTool = await delegationOf(client, toolId);
    snap = await reported(client, b, toolId);
    expect(results(snap, toolId)).toHaveLength(1);
    expect(results(snap, toolId)[0]!.content).toContain('you said: from the tool');
    const toolChild = await client.call<{ session_id: string }>('session.info', {
      session_id: fromTool.child_session_id,
    });
    expect(toolChild.session_id).toBe(fromTool.child_session_id);
    // The model asking for a wider child is told why, and nothing starts.
    const wider = nextEvent(client, 'approval.request', (e) => e.session_id === b);
    await client.call('prompt.submit', {
      session_id: b,
      submission_id: 'delegate-2',
      text: 'call: delegate {"task": "more", "toolsets": ["project"]}',
    });
    const ask = (await wider).event;
    await client.call('approval.respond', {
      session_id: b,
      prompt_id: ask['prompt_id'],
      execution_generation: ask['execution_generation'],
      choice: 'once',
    });
    snap = await quiet(client, b);
    expect(snap.messages.at(-2)!.content).toContain(
      'The delegation was not started: the parent session has no toolset project',
    );

    // The documented chat lines: /delegate starts one for the chat's session, /delegations lists it.
    expect(DOC_CHAT).toBe('/delegate hello from the chat\n/delegations\n');
    const chat = await runCli(d.home, ['chat', '--resume', b], { input: DOC_CHAT });
    expect(chat.code).toBe(0);
    const chatId = /\(delegated (dlg_[0-9a-f]+) /.exec(chat.stdout)![1]!;
    expect(chat.stdout).toMatch(new RegExp(`^${chatId}  \\[(running|reported: completed)\\]  child `, 'm'));
    snap = await reported(client, b, chatId);
    expect(results(snap, chatId)).toHaveLength(1);
    expect(results(snap, chatId)[0]!.content).toContain('you said: hello from the chat');

    // Deleting the parent stops its delegations, kept or not; the child session stays.
    const orphan = (await start(client, a, 'orphan', waitFor('orphan'))).delegation;
    await client.call('delegation.keep', { delegation_id: orphan.delegation_id });
    await fileAppears(join(cwd, 'orphan.started'));
    await client.call('session.delete', { session_id: a });
    expect(await delegationUntil(client, orphan.delegation_id, (x) => x.state === 'stopped')).toMatchObject({
      kept: true,
      detail: 'its parent session was deleted',
    });
    await quiet(client, orphan.child_session_id!);
    writeFileSync(join(cwd, 'orphan.go'), '');
  }, 120_000);

  it('a daemon SIGKILLed while children run or wait for a turn (the global turn limit): after the restart each result lands in the parent once, unknown included, even when it dies again right after admitting one', async () => {
    const demo = await rig.model();
    // Two turns at once: the global turn limit holds a third child's turn back like any turn.
    const config = modelConfig(demo, 'limits: {max_concurrent_turns: 2}');
    const d1 = await rig.daemon({ config });
    const c1 = await d1.connect();
    const cwd = tempDir();
    const p = await parent(c1, cwd, true);
    // One child is in its command when the daemon dies (its effect is unknown after the restart);
    // the other waits on its model call (its turn is resumed and completes).
    const inTool = (await start(c1, p, 'in-tool', waitFor('tool'))).delegation;
    await fileAppears(join(cwd, 'tool.started'));
    demo.hold();
    const asked = demo.waitForRequests(demo.requests.length + 1);
    const inModel = (await start(c1, p, 'in-model', 'survive the crash')).delegation;
    await asked;
    const waiting = (await start(c1, p, 'waits-for-a-turn', 'queued behind the limit')).delegation;
    await turnsUntil(c1, (t) => t.running === 2 && t.waiting === 1);
    expect((await delegationOf(c1, waiting.delegation_id)).state).toBe('running');
    await d1.kill();
    writeFileSync(join(cwd, 'tool.go'), '');
    demo.release();

    // The next daemon reports both; it dies right after admitting the second result, before marking it.
    await rig.dyingDaemon({
      home: d1.home,
      config,
      env: { GATEHOUSE_TEST_FAULTS: 'delegation.reported@2' },
    });
    const d3 = await rig.daemon({ home: d1.home, config });
    const client = await d3.connect();
    await client.call('session.resume', { session_id: p });
    const model = await delegationUntil(client, inModel.delegation_id, (x) => x.state === 'reported');
    const tool = await delegationUntil(client, inTool.delegation_id, (x) => x.state === 'reported');
    const queued = await delegationUntil(client, waiting.delegation_id, (x) => x.state === 'reported');
    expect(queued.outcome).toBe('completed');
    expect(model.outcome).toBe('completed');
    expect(tool.outcome).toBe('unknown');
    const snap = await quiet(client, p);
    const modelResults = results(snap, inModel.delegation_id);
    const toolResults = results(snap, inTool.delegation_id);
    expect(modelResults).toHaveLength(1);
    expect(modelResults[0]!.content).toContain('you said: survive the crash');
    expect(modelResults[0]!.admission_id).toBe(model.result_admission_id);
    expect(toolResults).toHaveLength(1);
    expect(toolResults[0]!.content).toContain(`Background delegation ${inTool.delegation_id} ended unknown`);
    expect(toolResults[0]!.admission_id).toBe(tool.result_admission_id);
    expect(results(snap, waiting.delegation_id)).toMatchObject([
      { admission_id: queued.result_admission_id },
    ]);
  }, 120_000);
});
