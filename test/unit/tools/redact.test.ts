import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../../src/runtime/approvals/redact.js';

/** [input, the secret that must disappear, what must stay visible] */
const CASES: [string, string, string][] = [
  ['curl -H "Authorization: Bearer abcdefghijklmnop123" https://api.x', 'abcdefghijklmnop123', 'Bearer ***'],
  [
    'OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv python run.py',
    'abcdefghijklmnopqrstuv',
    'OPENAI_API_KEY=***',
  ],
  ['echo sk-ant-api03-abcdefghijklmnop', 'abcdefghijklmnop', 'sk-ant-***'],
  ['git clone https://ghp_1234567890abcdefghijklmn@github.com/o/r', '1234567890abcdefghijklmn', 'ghp_***'],
  ['export GITHUB_TOKEN=ghp_1234567890abcdefghijklmn', '1234567890abcdefghijklmn', 'GITHUB_TOKEN=***'],
  ['curl -d token=xoxb-1234567890-abcdefghij slack', '1234567890-abcdefghij', 'token=***'],
  ['echo xoxp-1234567890-abcdefghij', '1234567890-abcdefghij', 'xoxp-***'],
  ['aws s3 ls AKIAIOSFODNN7EXAMPLE', 'IOSFODNN7EXAMPLE', 'AKIA***'],
  ['PASSWORD="a b c" ./run', 'a b c', 'PASSWORD=***'],
  ['DB_PASSWD=hunter2 make migrate', 'hunter2', 'DB_PASSWD=***'],
  ['tool --password hunter2 --verbose', 'hunter2', '--password *** --verbose'],
  ['tool --api-key=abc123xyz', 'abc123xyz', '--api-key=***'],
  ['mysql -u root -pS3cretPw db', 'S3cretPw', '-p***'],
  ['sshpass -p hunter2 ssh host', 'hunter2', 'sshpass -p ***'],
  ['psql postgres://admin:s3cr3t@db.example.com/x', 's3cr3t', 'postgres://admin:***@db.example.com/x'],
  ['curl -H "x-api-key: zzzzzzzzzzzz" https://x', 'zzzzzzzzzzzz', 'x-api-key: ***'],
  [
    'echo 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    '9f86d081884c7d659a2feaa0c55ad015',
    'echo ***',
  ],
];

/** Ordinary commands come through untouched. */
const UNTOUCHED = [
  'rm -rf ./build',
  'git push --force origin main',
  'mkdir -p build/out',
  'ssh -p 2222 host',
  'ls /usr/local/lib/node_modules/typescript/lib/typescript_stuff',
  'git commit --author="A U Thor <a@example.com>" -m fix',
  'echo supercalifragilisticexpialidocious_and_more_words',
  'curl https://example.com/path',
];

describe('RUN-3 redaction of commands shown to viewers', () => {
  it.each(CASES)('masks the secret in %s', (input, secret, visible) => {
    const out = redactSecrets(input);
    expect(out).not.toContain(secret);
    expect(out).toContain(visible);
  });

  it.each(UNTOUCHED)('leaves %s alone', (input) => {
    expect(redactSecrets(input)).toBe(input);
  });

  it('is idempotent', () => {
    for (const [input] of CASES) expect(redactSecrets(redactSecrets(input))).toBe(redactSecrets(input));
  });
});
