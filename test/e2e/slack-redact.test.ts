/**
 * CTX-2 on Slack through the real daemon: with `platforms.slack.redact_pii: true` the agent's
 * prompt carries hashed user and conversation ids while the reply still goes to the real
 * conversation; with the key off (the default) the real ids are what the model reads.
 */
import { describe, expect, it } from 'vitest';
import { redactChatId, redactUserId } from '../../src/domain/session/context.js';
import { mention, said, useSlackDaemon, type SlackDaemon } from './slack-fixture.js';

const KIM = { id: 'U0KIM', name: 'kim' };
const ANN = { id: 'U0ANN', name: 'ann', display_name: 'Ann' };

/** The system prompt of the model request that answered `marker`. */
function promptFor(sl: SlackDaemon, marker: string): string {
  const request = [...sl.model.requests]
    .reverse()
    .find((r) =>
      (r.body?.messages ?? []).some((m) => m.role === 'user' && String(m.content).includes(marker)),
    );
  if (request === undefined) throw new Error(`no model request answered "${marker}"`);
  return String(request.body!.messages!.find((m) => m.role === 'system')?.content);
}

async function talk(sl: SlackDaemon): Promise<{ dm: string; channel: string }> {
  const { standIn } = sl;
  for (const user of [KIM, ANN]) standIn.user(user);
  standIn.conversation({ id: 'D0KIM', kind: 'im' });
  standIn.conversation({ id: 'C0GENERAL', kind: 'channel', name: 'general' });
  await sl.start();
  // Replies go to the real conversations, whatever the model was shown.
  expect(await sl.ask('D0KIM', KIM, 'dm marker')).toBe(said('dm marker'));
  expect(await sl.ask('C0GENERAL', ANN, mention('channel marker'))).toBe(said('channel marker'));
  return { dm: promptFor(sl, 'dm marker'), channel: promptFor(sl, 'channel marker') };
}

describe('Slack redact_pii: true', { timeout: 90_000 }, () => {
  const sl = useSlackDaemon({ slackYaml: ['    redact_pii: true'] });

  it('hashes user and conversation ids in what the model receives', async () => {
    const { dm, channel } = await talk(sl);
    expect(dm).toContain(redactUserId(KIM.id));
    expect(dm).toContain(redactChatId('slack', 'D0KIM'));
    expect(channel).toContain(redactUserId(ANN.id));
    expect(channel).toContain(redactChatId('slack', 'C0GENERAL'));
    for (const raw of [KIM.id, 'D0KIM', ANN.id, 'C0GENERAL']) {
      expect(dm + channel).not.toContain(raw);
    }
  });
});

describe('Slack redact_pii off (the default)', { timeout: 90_000 }, () => {
  const sl = useSlackDaemon();

  it('shows the model the real user and conversation ids', async () => {
    const { dm, channel } = await talk(sl);
    expect(dm).toContain(KIM.id);
    expect(dm).toContain('D0KIM');
    expect(channel).toContain(ANN.id);
    expect(channel).toContain('C0GENERAL');
    expect(dm + channel).not.toContain(redactUserId(KIM.id));
  });
});
