/**
 * A tiny typed event channel: the broker publishes its lifecycle here (prompt opened, settled,
 * remembered) for logs, metrics and tests. Tests await `next(...)` instead of sleeping.
 */

export class Lifecycle<E extends { type: string }> {
  private readonly listeners = new Set<(event: E) => void>();

  on(listener: (event: E) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: E): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  /** Resolves with the next event of this type that satisfies `where`. */
  next<T extends E['type']>(
    type: T,
    where: (event: Extract<E, { type: T }>) => boolean = () => true,
  ): Promise<Extract<E, { type: T }>> {
    return new Promise((resolve) => {
      const off = this.on((event) => {
        if (event.type !== type) return;
        const typed = event as Extract<E, { type: T }>;
        if (!where(typed)) return;
        off();
        resolve(typed);
      });
    });
  }
}
