/**
 * The page's session state (src/surfaces/dashboard/web/session-state.ts) against a scripted link:
 * a message the snapshot already holds is not shown again when its late message.stored arrives;
 * a reset, undo or compression announced on the wire replaces the transcript with a fresh snapshot.
 */
import { describe, expect, it } from 'vitest';
import type { Link } from '../../../src/surfaces/dashboard/web/link.js';
import { SessionState } from '../../../src/surfaces/dashboard/web/session-state.js';
import type { Message, Snapshot } from '../../../src/surfaces/dashboard/web/wire.js';

function snapshot(messages: Message[], lastSeq: number, extra: Partial<Snapshot> = {}): Snapshot {
  return {
    session_id: 's1',
    messages,
    state: 'idle',
    paused_reason: null,
    running: null,
    pending_admissions: [],
    prompts: [],
    execution_generation: 1,
    epoch: 7,
    last_seq: lastSeq,
    info: {
      session_id: 's1',
      source: 'gui',
      platform: null,
      model: 'm',
      cwd: null,
      toolsets: null,
      title: null,
      created_at: '',
    },
    ...extra,
  };
}

/** A link whose session.resume answers the next scripted snapshot; every call is recorded. */
function scriptedLink(snapshots: Snapshot[]) {
  const calls: string[] = [];
  const link = {
    call(method: string) {
      calls.push(method);
      if (method === 'session.resume') return Promise.resolve(snapshots.shift()!);
      return Promise.resolve({});
    },
  } as unknown as Link;
  return { link, calls };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('SessionState', () => {
  it('drops the late announcement of a message of an unsettled turn the snapshot already had', async () => {
    const input: Message = { role: 'user', content: 'again', admission_id: 'a2' };
    const { link } = scriptedLink([
      snapshot([{ role: 'user', content: 'first', admission_id: 'a1' }, input], 10, {
        pending_admissions: [{ admission_id: 'a2', submission_id: 'retry:r1', state: 'queued' }],
      }),
    ]);
    const state = new SessionState('s1', link);
    await state.attach();
    state.arrive({
      epoch: 7,
      seq: 11,
      event: { type: 'turn.start', admission_id: 'a2', execution_generation: 2 },
    });
    state.arrive({ epoch: 7, seq: 12, event: { type: 'message.stored', message: input } });
    const answer: Message = { role: 'assistant', content: 'you said: again', admission_id: 'a2' };
    state.arrive({ epoch: 7, seq: 13, event: { type: 'message.stored', message: answer } });
    expect(state.messages.map((m) => m.content)).toEqual(['first', 'again', 'you said: again']);
    // Once the admission settled, the same text stored again is a new message.
    state.arrive({ epoch: 7, seq: 14, event: { type: 'admission.settled', admission_id: 'a2' } });
    state.arrive({ epoch: 7, seq: 15, event: { type: 'message.stored', message: input } });
    expect(state.messages.map((m) => m.content)).toEqual(['first', 'again', 'you said: again', 'again']);
  });

  it('a message of a settled turn in the snapshot does not hide a new one with the same text', async () => {
    const said: Message = { role: 'user', content: 'hello', admission_id: 'a1' };
    const { link } = scriptedLink([snapshot([said], 4)]);
    const state = new SessionState('s1', link);
    await state.attach();
    state.arrive({
      epoch: 7,
      seq: 5,
      event: { type: 'message.stored', message: { ...said, admission_id: 'a3' } },
    });
    expect(state.messages).toHaveLength(2);
  });

  it.each(['session.reset', 'transcript.rewound', 'session.compressed'])(
    '%s replaces the transcript with a fresh snapshot',
    async (type) => {
      const { link, calls } = scriptedLink([
        snapshot([{ role: 'user', content: 'old' }], 3),
        snapshot([{ role: 'user', content: 'kept' }], 4),
      ]);
      const state = new SessionState('s1', link);
      await state.attach();
      state.arrive({ epoch: 7, seq: 4, event: { type } });
      await flush();
      expect(calls.filter((m) => m === 'session.resume')).toHaveLength(2);
      expect(calls).not.toContain('session.events.since');
      expect(state.messages.map((m) => m.content)).toEqual(['kept']);
      expect(state.position).toEqual({ epoch: 7, lastSeq: 4 });
    },
  );

  it('issue 26 item 3: a compression is announced with its counts beside the fresh transcript', async () => {
    const { link } = scriptedLink([
      snapshot([{ role: 'user', content: 'old' }], 3),
      snapshot([{ role: 'user', content: 'kept' }], 4),
    ]);
    const state = new SessionState('s1', link);
    await state.attach();
    const changes: string[] = [];
    state.onChange((c) => changes.push(c));
    state.arrive({
      epoch: 7,
      seq: 4,
      event: { type: 'session.compressed', messages_before: 42, messages_after: 9, method: 'summary' },
    });
    await flush();
    expect(state.notices).toEqual(['earlier messages summarized: 42 → 9']);
    expect(changes).toContain('all'); // the redraw that shows the notice
  });
});
