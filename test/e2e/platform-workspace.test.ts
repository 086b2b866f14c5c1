/**
 * A chat-platform session's tools run in a workspace of their own (issue 25 item 5,
 * docs/tool-reach.md), `<home>-workspaces/<platform>/<chat id>`, created owner-only, never in the
 * profile folder beside state.db: `echo x > state.db` from a chat writes into that workspace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { useTelegramDaemon } from './telegram-fixture.js';

// approvals off: the commands run unasked whatever the approval rules say of them.
const tg = useTelegramDaemon({ yaml: ['approvals:', '  mode: off'] });
const DM = { id: 4242, type: 'private' as const };
const KIM = { id: 4242, first_name: 'Kim' };

afterAll(() => fs.rmSync(`${tg.home}-workspaces`, { recursive: true, force: true }));

describe('platform sessions get a workspace outside the home', () => {
  it('`echo x > state.db` from a chat lands in its workspace; the gateway database is untouched', async () => {
    await tg.start();
    const stateDb = homeLayout(tg.home).stateDb('default');
    await tg.ask(DM, KIM, 'run: pwd > where.txt; echo x > state.db');
    const workspace = path.join(`${tg.home}-workspaces`, 'telegram', String(DM.id));
    expect(fs.readFileSync(path.join(workspace, 'where.txt'), 'utf8').trim()).toBe(workspace);
    expect(fs.readFileSync(path.join(workspace, 'state.db'), 'utf8')).toBe('x\n');
    expect(fs.statSync(workspace).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync(stateDb).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    // Naming the gateway's files from a chat is refused, approvals off or not.
    await tg.ask(DM, KIM, `run: echo x > ${stateDb}`);
    expect(fs.readFileSync(stateDb).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
  });
});
