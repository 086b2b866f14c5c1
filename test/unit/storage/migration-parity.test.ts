/**
 * STO-6: every SQLite migration has its PostgreSQL counterpart with the same number and name, so a
 * new SQLite migration cannot land without the PostgreSQL one (src/storage/postgres/migrations/).
 */
import { describe, expect, it } from 'vitest';
import { MIGRATIONS as PG } from '../../../src/storage/postgres/migrations/index.js';
import { MIGRATIONS as SQLITE } from '../../../src/storage/sqlite/migrations/index.js';

describe('migration parity', () => {
  it('SQLite and PostgreSQL have the same migration numbers and names', () => {
    expect(PG.filter((m) => m.postgresOnly !== true).map((m) => `${m.version} ${m.name}`)).toEqual(
      SQLITE.map((m) => `${m.version} ${m.name}`),
    );
  });
});
