import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { writeFileTool } from '../../../src/runtime/tools/project.js';
import { commandNamesOffLimits, guardGatewayFiles, offLimitRoots } from '../../../src/runtime/tools/reach.js';
import { harness, tempDir } from './harness.js';

describe("the gateway's own files (issue 25, item 5)", () => {
  const parent = fs.realpathSync(tempDir());
  const home = path.join(parent, 'home');
  fs.mkdirSync(path.join(home, 'profiles', 'default'), { recursive: true });
  const roots = offLimitRoots([home]);

  it('names the home literally, through a cd, through a symlink, or not at all', () => {
    const cwd = tempDir();
    fs.symlinkSync(home, path.join(cwd, 'link'));
    expect(commandNamesOffLimits(`cat ${home}/config.yaml`, cwd, roots)).toBe(home);
    expect(commandNamesOffLimits(`cd ${parent}; rm home/profiles/default/state.db`, cwd, roots)).toBe(home);
    expect(commandNamesOffLimits('echo x > link/config.yaml', cwd, roots)).toBe(home);
    // A sibling whose name merely starts with the home's is not the home.
    expect(commandNamesOffLimits(`ls ${home}-workspaces/telegram`, cwd, roots)).toBeNull();
    expect(commandNamesOffLimits('echo x > state.db', cwd, roots)).toBeNull();
    if (home.startsWith(`${os.homedir()}/`)) return;
    expect(commandNamesOffLimits('cat ~/.bashrc', cwd, roots)).toBeNull();
  });

  it('refuses a project tool path into the home even when the cwd contains it, yolo or not', async () => {
    const [guarded] = guardGatewayFiles([writeFileTool], [home]);
    const { context } = harness(new PromptBroker(), { cwd: parent, yolo: true });
    const result = await guarded!.run({ path: 'home/config.yaml', content: 'x' }, context);
    expect(result).toMatchObject({ isError: true });
    expect(result.content).toContain("the gateway's own files");
    expect(fs.existsSync(path.join(home, 'config.yaml'))).toBe(false);
  });
});
