/**
 * The cost of step resume's durability (REC-7): one tool turn (`run: true`: a model call, the
 * terminal tool, a second model call) through the real store and the real runner, claimed and
 * settled by group commit on a file database, with the step boundaries (the durable started mark
 * before the tool spawns, the result committed with the mark cleared) against the same turn with
 * the result appended as before and no started mark. Both alternate in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { newAdmissionId, submissionDigest } from '../src/domain/local/admission.js';
import { creationDigest, freezeLaunchPolicy } from '../src/domain/local/launch-policy.js';
import { RECEIPT_KIND, type CreationReceipt } from '../src/domain/local/receipt.js';
import { SessionSource } from '../src/domain/session/source.js';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { ModelClient } from '../src/runtime/model/client.js';
import { runTurn } from '../src/runtime/runner.js';
import { terminalTool } from '../src/runtime/tools/terminal.js';
import type { PromptHost } from '../src/runtime/types.js';
import { SqliteLocalStore } from '../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { figure, percentile, type Bench } from './lib.js';
import { emptyLookups, oneProvider } from '../test/fixtures/launch-fixtures.js';

const OWNER = { subject: 'owner', provider: 'native' };
const noPrompts: PromptHost = {
  requestApproval: () => Promise.resolve({ kind: 'denied' }),
  askClarify: () => Promise.resolve({ kind: 'skipped' }),
};

const bench: Bench = {
  name: 'step-boundaries',
  async run({ quick }) {
    const dir = mkdtempSync(join(tmpdir(), 'gh-bench-steps-'));
    const demo = await startDemoModel({ latencyMs: 0 });
    const client = new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' });
    const store = SqliteSessionStore.open(join(dir, 'state.db'));
    const local = new SqliteLocalStore(store.db);
    const epoch = await local.openEpoch('bench');
    const id = '20260101_000000_0000beef';
    const params = { cwd: dir, model: 'gatehouse-demo' };
    const policy = freezeLaunchPolicy(
      params,
      {
        cwd: dir,
        model: 'gatehouse-demo',
        toolsets: ['terminal'],
        knownToolsets: ['terminal'],
        maxTurns: 4,
        providers: oneProvider(),
        offerSkills: false,
      },
      emptyLookups(),
    );
    const receipt: CreationReceipt = {
      kind: RECEIPT_KIND,
      logical_id: id,
      current_session_id: id,
      owner: OWNER,
      profile: 'default',
      request_id: null,
      creation_digest: creationDigest(params),
      policy,
      lineage: [],
      created_at: new Date().toISOString(),
    };
    const origin = new SessionSource({ platform: 'local', chat_id: id }).toJSON();
    await local.commitCreation({ receipt, origin, title: null, hidden: false });

    let counter = 0;
    const turn = async (steps: boolean): Promise<void> => {
      const text = 'run: true';
      const admission_id = newAdmissionId();
      await local.admit({
        admission_id,
        logical_id: id,
        submission_id: `s${++counter}`,
        submitter: OWNER,
        profile: 'default',
        digest: submissionDigest(text),
        text,
        binding: null,
      });
      const claim = await local.claimNext(id, epoch);
      if (claim.kind !== 'claimed') throw new Error(`claim: ${claim.kind}`);
      const fence = { admission_id, epoch, generation: claim.generation };
      const result = await runTurn({
        sessionId: id,
        admissionId: admission_id,
        executionGeneration: claim.generation,
        model: client,
        systemPrompt: 'bench',
        tools: [terminalTool],
        cwd: dir,
        yolo: true,
        maxTurns: 4,
        history: [],
        input: claim.input,
        inputStored: true,
        transcript: {
          append: async (_s, messages) => {
            if (steps && messages.some((m) => m.role === 'tool')) {
              await local.recordToolResult(fence, messages);
              return;
            }
            await store.appendToTranscript(id, messages);
          },
        },
        ...(steps
          ? { markToolStarted: (call) => local.markToolStarted(fence, call.id).then(() => undefined) }
          : {}),
        commitFinal: async (messages, end) => {
          await local.settle({ ...fence, outcome: end.outcome, detail: null, messages, usage: end.usage });
        },
        prompts: noPrompts,
        signal: new AbortController().signal,
        emit: () => undefined,
      });
      if (result.outcome !== 'completed') throw new Error(`turn ${result.outcome}`);
    };

    const n = quick ? 40 : 200;
    const withMs: number[] = [];
    const withoutMs: number[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        await turn(true);
        await turn(false);
      }
      for (let i = 0; i < n; i++) {
        const order = i % 2 === 0 ? [true, false] : [false, true];
        for (const steps of order) {
          const t = performance.now();
          await turn(steps);
          (steps ? withMs : withoutMs).push(performance.now() - t);
        }
      }
    } finally {
      await store.close();
      await demo.close();
      rmSync(dir, { recursive: true, force: true });
    }
    withMs.sort((a, b) => a - b);
    withoutMs.sort((a, b) => a - b);
    return [
      figure({
        bench: 'step-boundaries',
        name: 'tool turn p50 with step boundaries',
        value: percentile(withMs, 50),
        unit: 'ms',
        baseline: { name: 'the same turn without them p50', value: percentile(withoutMs, 50) },
        higherIsBetter: false,
        aim: { op: '<=', ratio: 1.1 },
        extra: { samples: n },
      }),
      figure({
        bench: 'step-boundaries',
        name: 'tool turn p99 with step boundaries',
        value: percentile(withMs, 99),
        unit: 'ms',
        baseline: { name: 'the same turn without them p99', value: percentile(withoutMs, 99) },
        higherIsBetter: false,
        extra: { samples: n },
      }),
    ];
  },
};

export default bench;
