import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteSessionStore, StorageUnavailableError } from '../../../src/index.js';
import { source } from '../../shared/fixtures.js';

describe('docs/storage.md quick example', () => {
  it('does what the page says, through the package entry', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-docs-'));
    try {
      const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
      const key = 'agent:main:telegram:dm:1001';
      const { entry, kind } = await store.getOrCreateSession(key, source());
      expect(kind).toBe('created');
      await store.appendToTranscript(entry.session_id, [
        { role: 'user', content: 'What is in my home directory?' },
        { role: 'assistant', content: 'Three folders: docs, src and tmp.' },
      ]);
      await store.addUsage(key, { input_tokens: 120, output_tokens: 14, total_tokens: 134 });
      expect((await store.searchMessages('folders'))[0]!.snippet).toBe('Three [folders]: docs, src and tmp.');
      expect(await store.rewindSession(entry.session_id, 1)).toEqual({
        rewound_count: 2,
        turns_undone: 1,
        target_text: 'What is in my home directory?',
      });
      expect((await store.resetSession(key))!.is_fresh_reset).toBe(true);
      await store.close();

      fs.writeFileSync(path.join(dir, 'bad.db'), 'not a database');
      expect(() => SqliteSessionStore.open(path.join(dir, 'bad.db'))).toThrow(StorageUnavailableError);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
