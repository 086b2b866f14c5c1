import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { setConfigString } from '../../../src/daemon/config-edit.js';

const HASH = 'scrypt$32768$8$1$c2FsdA+/==$a2V5/+==';

/** The owner's own layout: odd spacing and ordering, quotes, flow style, comments everywhere. */
const ODD = `# my notes, keep them
limits:   { max_concurrent_turns: 3 }   # flow, odd spacing
profiles: [ default,  work ]
listener:
    port: 0            # four-space indent
    host:   "127.0.0.1"
`;

describe('config.yaml edits change only the edited key (issue 12 item 2)', () => {
  it.each([
    ['a file without the section', ODD, `${ODD}dashboard:\n  password_hash: ${HASH}\n`],
    ['an empty file', '', `dashboard:\n  password_hash: ${HASH}\n`],
    [
      'a comment-only file without a final newline',
      '# only',
      `# only\ndashboard:\n  password_hash: ${HASH}\n`,
    ],
    [
      'a section with other keys and comments',
      'dashboard:\n    other: 1   # c\n    # trailing c\n\nz:  2\n',
      `dashboard:\n    other: 1   # c\n    password_hash: ${HASH}\n    # trailing c\n\nz:  2\n`,
    ],
    [
      'a hash already set',
      `a: 1\ndashboard:\n  password_hash:   'old'   # set by passwd\nz: [ 1 ]\n`,
      `a: 1\ndashboard:\n  password_hash:   ${HASH}   # set by passwd\nz: [ 1 ]\n`,
    ],
    ['an empty section', 'dashboard:\nz:  1\n', `dashboard:\n  password_hash: ${HASH}\nz:  1\n`],
    ['a null section', 'dashboard: ~ # none\n', `dashboard: { password_hash: ${HASH} } # none\n`],
    ['a flow section', 'dashboard: {a: 1}\n', `dashboard: {a: 1, password_hash: ${HASH} }\n`],
    ['an empty flow section', 'dashboard: {}\n', `dashboard: { password_hash: ${HASH} }\n`],
  ])('%s', (_name, before, after) => {
    const updated = setConfigString(before, 'dashboard', 'password_hash', HASH);
    expect(updated).toBe(after);
    expect(parseDocument(updated).getIn(['dashboard', 'password_hash'])).toBe(HASH);
  });

  it('quotes a value that would not read back as the same string', () => {
    const updated = setConfigString('', 'dashboard', 'password_hash', 'true');
    expect(updated).toBe('dashboard:\n  password_hash: "true"\n');
  });
});
