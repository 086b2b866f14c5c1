/**
 * The budget guard (docs/cost.md, "Budgets"): wraps a turn's model so that before each call the
 * call's worst case (its prompt tokens and the output cap, priced) is reserved durably against the
 * limits, and after it the reservation is settled with the call's real usage. A call that does not
 * fit is not sent: it fails with the model error `budget_exhausted`, which ends the turn with that
 * reason, and the session stays paused until a raise, a continue-once or a day that has room.
 *
 * Kept apart from the model client and the runner: both engines hand it the model they would call,
 * and get back one that answers the same way.
 */
import { randomBytes } from 'node:crypto';
import { ModelError } from '../../runtime/model/errors.js';
import type { ChatModel, ChatRequest, ChatResult } from '../../runtime/model/client.js';
import { callCost, type ModelPrice } from '../../runtime/model/pricing.js';
import { countRequestTokens, countTextTokens } from '../../runtime/context/tokens.js';
import { dayOf } from '../ports/costs.js';
import type { BudgetLedger } from '../ports/budgets.js';
import {
  decideReservation,
  pauseHolds,
  type BudgetAmount,
  type BudgetDecision,
  type BudgetLimits,
  type BudgetWarning,
  type PauseHold,
} from './decide.js';

export interface BudgetSettings {
  /** The profile's limits (`budgets` in config.yaml). */
  limits: BudgetLimits;
  /** The output cap each call is sent with and reserved at. */
  maxOutputTokens: number;
}

/** What a guarded call tells the session's viewers (local) or the gateway's events (chat platforms). */
export type BudgetEvent =
  | ({ type: 'budget.warning' } & BudgetWarning)
  | {
      type: 'budget.exhausted';
      reason: 'budget_exhausted';
      limit: string;
      measure: string;
      spent: number;
      limit_value: number;
      worst: number;
      message: string;
    };

/** One turn's place in the budget: whose spend it is, and what its session may spend. */
export interface TurnBudget {
  sessionKey: string;
  principal: string;
  turnId: string;
  /** The session's own limit (its launch's), when lower than the profile's; null: the profile's. */
  sessionLimit: BudgetAmount | null;
  /** The price of the session's model; null: its US dollars are not known before the call. */
  price: ModelPrice | null;
  /** What the user may do about a refusal, after the refusal's own words. */
  hint: string;
  emit(event: BudgetEvent): void;
}

/** What a guarded turn learned: the refusal that ended it, if one did. */
export interface GuardedModel extends ChatModel {
  readonly refusal: Extract<BudgetDecision, { kind: 'refused' }> | null;
}

export class BudgetGuard {
  constructor(
    private readonly ledger: BudgetLedger,
    readonly settings: BudgetSettings,
    /** The budget clock: what day a call is counted in. */
    private readonly now: () => Date,
  ) {}

  /** The budget day now, `YYYY-MM-DD` (UTC, on the budget clock). */
  today(): string {
    return dayOf(this.now().toISOString());
  }

  /** The limits a session is held to: its launch's session limit where it sets one. */
  limitsFor(sessionLimit: BudgetAmount | null): BudgetLimits {
    const profile = this.settings.limits;
    if (sessionLimit === null) return profile;
    return {
      ...profile,
      session: {
        tokens: sessionLimit.tokens ?? profile.session.tokens,
        usd: sessionLimit.usd ?? profile.session.usd,
      },
    };
  }

  /**
   * While a session its budget paused has no room for even the smallest call (decide.ts pauseHolds),
   * the limit that holds it; null: a prompt may be admitted. `text` is the prompt to be admitted.
   */
  async pauseHold(
    sessionKey: string,
    principal: string,
    sessionLimit: BudgetAmount | null,
    text: string,
  ): Promise<PauseHold | null> {
    const record = await this.ledger.sessionBudget(sessionKey);
    if (record.paused === null) return null;
    const spends = await this.ledger.budgetSpends(sessionKey, principal, this.today());
    const floor = { tokens: this.settings.maxOutputTokens + countTextTokens(text), usd: 0 };
    return pauseHolds(record, spends, this.limitsFor(sessionLimit), floor);
  }

  /** `model`, each call reserved before and settled after. */
  guard(model: ChatModel, turn: TurnBudget): GuardedModel {
    const limits = this.limitsFor(turn.sessionLimit);
    // No limit in force: the model as it is, nothing reserved, no output cap added.
    if (!Object.values(limits).some((l) => l.tokens !== null || l.usd !== null))
      return { ...providerOf(model), complete: (request) => model.complete(request), refusal: null };
    const maxOutput = this.settings.maxOutputTokens;
    let refusal: GuardedModel['refusal'] = null;
    const complete = async (request: ChatRequest): Promise<ChatResult> => {
      const prompt = countRequestTokens(request.messages, request.tools ?? []);
      const worst = {
        tokens: prompt + maxOutput,
        usd: turn.price
          ? callCost(
              {
                input_tokens: prompt,
                output_tokens: maxOutput,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                total_tokens: prompt + maxOutput,
              },
              turn.price,
            ).cost_usd
          : 0,
      };
      const now = this.now();
      const reservation = {
        reservation_id: `bud_${randomBytes(12).toString('base64url')}`,
        session_key: turn.sessionKey,
        principal: turn.principal,
        turn_id: turn.turnId,
        day: dayOf(now.toISOString()),
        at: now.toISOString(),
        ...worst,
      };
      const decision = await this.ledger.reserveBudget(reservation, (record, spends) =>
        decideReservation(record, spends, limits, reservation),
      );
      if (decision.kind === 'refused') {
        refusal = decision;
        const message = `${exhaustedMessage(decision)} ${turn.hint}`;
        turn.emit({
          type: 'budget.exhausted',
          reason: 'budget_exhausted',
          limit: decision.limit,
          measure: decision.measure,
          spent: decision.spent,
          limit_value: decision.limit_value,
          worst: decision.worst,
          message,
        });
        throw new ModelError('budget_exhausted', message);
      }
      for (const warning of decision.warnings) turn.emit({ type: 'budget.warning', ...warning });
      const settle = (actual: { tokens: number; usd: number }) =>
        this.ledger
          .settleBudget(reservation.reservation_id, actual, this.now().toISOString())
          // Unsettled, the call counts its worst case until recovery settles it there: never less.
          .catch(() => false);
      let answer: ChatResult;
      try {
        answer = await model.complete({ ...request, maxOutputTokens: maxOutput });
      } catch (error) {
        // An answer cut short may have been billed in full; a refused request was not.
        await settle(request.signal?.aborted ? worst : { tokens: 0, usd: 0 });
        throw error;
      }
      await settle({ tokens: answer.usage.total_tokens, usd: answer.usage.cost_usd ?? 0 });
      return answer;
    };
    return {
      ...providerOf(model),
      complete,
      get refusal() {
        return refusal;
      },
    };
  }
}

const MEASURE_WORDS: Record<string, (n: number) => string> = {
  tokens: (n) => `${Math.round(n).toLocaleString('en-US')} tokens`,
  usd: (n) => `$${n.toFixed(4)}`,
};
const LIMIT_WORDS: Record<string, string> = {
  session: "this session's budget",
  principal_daily: 'your budget for today (UTC)',
  daily: "the gateway's budget for today (UTC)",
};

/** What the user reads: which limit, how much is spent, what the next call could need. */
export function exhaustedMessage(d: Extract<BudgetDecision, { kind: 'refused' }>): string {
  const words = MEASURE_WORDS[d.measure]!;
  return (
    `Paused: ${LIMIT_WORDS[d.limit]} is used up (${words(d.spent)} of ${words(d.limit_value)} spent; ` +
    `the next model call could take up to ${words(d.worst)}), so the model was not called.`
  );
}

/** Why a prompt to a paused session is refused: which limit, how much is spent. */
export function holdMessage(h: PauseHold): string {
  const words = MEASURE_WORDS[h.measure]!;
  return (
    `Paused: ${LIMIT_WORDS[h.limit]} is used up (${words(h.spent)} of ${words(h.limit_value)} spent), ` +
    'so no prompt is taken until it has room again.'
  );
}

/** The wrapped model's provider name, which traces report (a guarded model is the same provider). */
function providerOf(model: ChatModel): { provider?: string } {
  return model.provider === undefined ? {} : { provider: model.provider };
}
