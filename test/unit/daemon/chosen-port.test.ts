/**
 * Issue 31 item 6: where the listener binds first when the config names no port, and the file that
 * keeps the port chosen when the default was taken (so the dashboard URL stays the same).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chosenPortFile,
  portPlan,
  readChosenPort,
  rememberChosenPort,
  rememberedPortTaken,
} from '../../../src/daemon/chosen-port.js';
import { DEFAULT_PORT } from '../../../src/daemon/default-port.js';

describe('the kept listener port', () => {
  it('plans: a named port is insisted on, a remembered one too, only the default gives way', () => {
    expect(portPlan(8123, 40000)).toEqual({ port: 8123, mayGiveWay: false, remembered: null });
    expect(portPlan(0, null)).toEqual({ port: 0, mayGiveWay: false, remembered: null });
    expect(portPlan(undefined, 40000)).toEqual({ port: 40000, mayGiveWay: false, remembered: 40000 });
    expect(portPlan(undefined, null)).toEqual({ port: DEFAULT_PORT, mayGiveWay: true, remembered: null });
  });

  it('remembers a port in the home and ignores a file that holds no port', () => {
    const home = mkdtempSync(join(tmpdir(), 'gh-port-'));
    expect(readChosenPort(home)).toBeNull();
    rememberChosenPort(home, 40367);
    expect(readChosenPort(home)).toBe(40367);
    for (const junk of ['', 'eighty', '0', '70000', '123abc']) {
      writeFileSync(chosenPortFile(home), junk);
      expect(readChosenPort(home)).toBeNull();
    }
  });

  it('says what to do when the kept port is taken', () => {
    const error = rememberedPortTaken(40367, '/h', '/h/config.yaml');
    expect(error.code).toBe('port_in_use');
    expect(error.message).toContain('port 40367 is in use');
    expect(error.message).toContain('/h/config.yaml');
    expect(error.message).toContain(chosenPortFile('/h'));
  });
});
