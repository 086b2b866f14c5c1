/**
 * What every surface says when a conversation was compressed (issue 26 item 3): the chat, the
 * dashboard and chat platforms print the same line, "earlier messages summarized: 42 → 9", from a
 * `session.compressed` event (or a /compress answer). Pure and import-free: the dashboard bundles it.
 */
/** An event's fields: `messages_before`, `messages_after`, `method` (`summary`, the default, or `dropped`). */
export type CompressionFacts = Readonly<Record<string, unknown>>;

export function compressionNotice(facts: CompressionFacts): string {
  const counts = `${String(facts['messages_before'])} → ${String(facts['messages_after'])}`;
  return facts['method'] === 'dropped'
    ? `earlier messages dropped to fit the model's context window (no summary could be made): ${counts}`
    : `earlier messages summarized: ${counts}`;
}
