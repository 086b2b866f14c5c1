/**
 * 029 on PostgreSQL: the env and header values of sessions' own MCP servers leave the store (as
 * SQLite's 029, which rows/mcp-scrub.ts does in code): in creation receipts (whose creation_digest,
 * which hashed them, becomes a marker), delegations' launches and scheduled jobs' targets, each value
 * becomes "" and its name stays. A row whose text is not JSON is left as it is. The old row
 * versions are dead tuples until (auto)vacuum reclaims them (docs/decisions.md).
 */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 29,
  name: 'mcp_values',
  sql: `
    CREATE FUNCTION pg_temp.gh029_json(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $f$
    BEGIN
      RETURN t::jsonb;
    EXCEPTION WHEN others THEN
      RETURN NULL;
    END
    $f$;

    CREATE FUNCTION pg_temp.gh029_blank(o jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $f$
      SELECT CASE WHEN coalesce(jsonb_typeof(o), '') <> 'object' THEN o
        ELSE coalesce((SELECT jsonb_object_agg(e.key, to_jsonb(''::text)) FROM jsonb_each(o) e), o) END
    $f$;

    CREATE FUNCTION pg_temp.gh029_servers(servers jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $f$
      SELECT CASE WHEN coalesce(jsonb_typeof(servers), '') <> 'object' THEN servers
        ELSE coalesce((
          SELECT jsonb_object_agg(s.key, CASE WHEN jsonb_typeof(s.value) <> 'object' THEN s.value ELSE
            s.value
            || CASE WHEN jsonb_typeof(s.value -> 'env') = 'object'
                 THEN jsonb_build_object('env', pg_temp.gh029_blank(s.value -> 'env')) ELSE '{}'::jsonb END
            || CASE WHEN jsonb_typeof(s.value -> 'headers') = 'object'
                 THEN jsonb_build_object('headers', pg_temp.gh029_blank(s.value -> 'headers')) ELSE '{}'::jsonb END
            END)
          FROM jsonb_each(servers) s), servers) END
    $f$;

    UPDATE private_receipts SET body = jsonb_set(
        jsonb_set(j, '{policy,mcp_servers,own}', pg_temp.gh029_servers(j #> '{policy,mcp_servers,own}')),
        '{creation_digest}', '"scrubbed:mcp-values"')::text
      FROM (SELECT key AS k, pg_temp.gh029_json(body) AS j FROM private_receipts) AS parsed
      WHERE private_receipts.key = parsed.k
        AND jsonb_typeof(j #> '{policy,mcp_servers,own}') = 'object'
        AND pg_temp.gh029_servers(j #> '{policy,mcp_servers,own}') <> j #> '{policy,mcp_servers,own}';

    UPDATE delegations SET launch = jsonb_set(j, '{mcp_servers}', pg_temp.gh029_servers(j -> 'mcp_servers'))::text
      FROM (SELECT delegation_id AS k, pg_temp.gh029_json(launch) AS j FROM delegations) AS parsed
      WHERE delegations.delegation_id = parsed.k
        AND jsonb_typeof(j -> 'mcp_servers') = 'object'
        AND pg_temp.gh029_servers(j -> 'mcp_servers') <> j -> 'mcp_servers';

    UPDATE scheduled_jobs SET target = jsonb_set(j, '{launch,mcp_servers}', pg_temp.gh029_servers(j #> '{launch,mcp_servers}'))::text
      FROM (SELECT job_id AS k, pg_temp.gh029_json(target) AS j FROM scheduled_jobs) AS parsed
      WHERE scheduled_jobs.job_id = parsed.k
        AND jsonb_typeof(j #> '{launch,mcp_servers}') = 'object'
        AND pg_temp.gh029_servers(j #> '{launch,mcp_servers}') <> j #> '{launch,mcp_servers}';

    DROP FUNCTION pg_temp.gh029_servers(jsonb);
    DROP FUNCTION pg_temp.gh029_blank(jsonb);
    DROP FUNCTION pg_temp.gh029_json(text);
  `,
};
