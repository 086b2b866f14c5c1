/**
 * What a client says of a session's cost and usage (docs/cost.md): the chat's `/cost` and the
 * dashboard's session list and "Context and cost" panel print these figures from the same answers
 * (`session.cost`, `session.turns`, `session.context`, `cost.summary`) in the same words.
 *
 * Pure, with no runtime imports: the dashboard's browser bundle includes it (its tsconfig lists it).
 * Only how a number is written differs by surface: the terminal prints plain digits, the browser
 * groups them for its locale; each function takes that as `count` (plain digits by default).
 */
import type { CostStatus } from '../../domain/vocabulary.js';

/** How a count is written: `5210` in a terminal, `5,210` in a browser. */
export type CountText = (n: number) => string;

const plain: CountText = (n) => String(n);

/** A cost figure as the RPC answers give it; absent where the answer has none. */
export interface CostFigure {
  usd: number;
  status: CostStatus;
}

/**
 * `$0.0123` (reported), `~$0.0123 (estimated)`, `$0.0123+ (some calls unpriced)` (a lower bound),
 * or `cost unknown` (no figure, or no priced call at all).
 */
export function costText(cost: CostFigure | null | undefined): string {
  if (!cost) return 'cost unknown';
  const amount = `$${cost.usd.toFixed(4)}`;
  if (cost.status === 'reported') return amount;
  if (cost.status === 'estimated') return `~${amount} (estimated)`;
  return cost.usd > 0 ? `${amount}+ (some calls unpriced)` : 'cost unknown';
}

export interface TokenCounts {
  input: number;
  cache_read: number;
  output: number;
}

/** `4800 in, 0 cached, 410 out`. */
export function tokenCountsText(t: TokenCounts, count: CountText = plain): string {
  return `${count(t.input)} in, ${count(t.cache_read)} cached, ${count(t.output)} out`;
}

/** `5210 tokens (4800 in, 0 cached, 410 out)`. */
export function tokensText(t: TokenCounts & { total: number }, count: CountText = plain): string {
  return `${count(t.total)} tokens (${tokenCountsText(t, count)})`;
}

/** What session.context answers (docs/dashboard.md, "Context and cost"). */
export interface ContextView {
  window: number;
  threshold: number;
  compress_at: number;
  tokens: number;
  used: number;
  until_compression: number;
  compression_due: boolean;
}

const percent = (fraction: number): string => `${Math.round(fraction * 100)}%`;

/**
 * How full the context window is and where compression starts: `1234 of 128000 tokens (1%) ·
 * compression at 96000 (75%): 94766 tokens to go`, or `… · past compression at …: the next turn
 * compresses first`.
 */
export function contextText(c: ContextView, count: CountText = plain): string {
  const head = `${count(c.tokens)} of ${count(c.window)} tokens (${percent(c.used)})`;
  const at = `compression at ${count(c.compress_at)} (${percent(c.threshold)})`;
  return c.compression_due
    ? `${head} · past ${at}: the next turn compresses first`
    : `${head} · ${at}: ${count(c.until_compression)} tokens to go`;
}
