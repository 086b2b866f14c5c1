/** Every schema migration, in order. Append only: a new migration is a new file and one line here. */
import type { Migration } from '../migration.js';
import { migration as m001 } from './001_sessions.js';
import { migration as m002 } from './002_local_sessions.js';
import { migration as m003 } from './003_messaging.js';
import { migration as m004 } from './004_inbound_ledger.js';
import { migration as m005 } from './005_inbound_backlog.js';
import { migration as m006 } from './006_search_watermark.js';
import { migration as m007 } from './007_compression.js';
import { migration as m008 } from './008_lineage.js';
import { migration as m009 } from './009_transcript_edits.js';
import { migration as m010 } from './010_turn_steps.js';
import { migration as m013 } from './013_platform_cursors.js';
import { migration as m014 } from './014_platform_turn_steps.js';
import { migration as m016 } from './016_session_events.js';
import { migration as m018 } from './018_turn_costs.js';
import { migration as m019 } from './019_budgets.js';
import { migration as m020 } from './020_request_keys.js';
import { migration as m021 } from './021_scheduled_jobs.js';
import { migration as m022 } from './022_access.js';
import { migration as m023 } from './023_session_manage.js';
import { migration as m024 } from './024_compression_steps.js';
import { migration as m025 } from './025_budget_pause_worst.js';
import { migration as m026 } from './026_steers.js';
import { migration as m027 } from './027_job_delivery.js';
import { migration as m028 } from './028_delegations.js';
import { migration as m029 } from './029_mcp_values.js';

export const MIGRATIONS: readonly Migration[] = [
  m001,
  m002,
  m003,
  m004,
  m005,
  m006,
  m007,
  m008,
  m009,
  m010,
  m013,
  m014,
  m016,
  m018,
  m019,
  m020,
  m021,
  m022,
  m023,
  m024,
  m025,
  m026,
  m027,
  m028,
  m029,
];
