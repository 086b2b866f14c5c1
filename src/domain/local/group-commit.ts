/**
 * Group commit (LOC-8): admissions that arrive together are committed in one transaction, and none
 * is acknowledged before that transaction is durable. Submissions queue until the current tick ends
 * (setImmediate), then the whole batch goes to the store at once; while a commit is being written,
 * new arrivals gather for the next batch. One fsync then acknowledges many clients.
 */
import type { AdmitResult, NewAdmission } from '../../storage/local-store.js';

interface Waiter {
  admission: NewAdmission;
  resolve(result: AdmitResult): void;
  reject(error: unknown): void;
}

export class GroupCommitter {
  private pending: Waiter[] = [];
  private scheduled = false;
  /** Batches committed so far and admissions in them, for metrics and the benchmark. */
  readonly stats = { batches: 0, admissions: 0, largest: 0 };

  constructor(
    private readonly commit: (batch: readonly NewAdmission[]) => AdmitResult[],
    private readonly maxBatch = 512,
  ) {}

  submit(admission: NewAdmission): Promise<AdmitResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ admission, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      let results: AdmitResult[];
      try {
        results = this.commit(batch.map((w) => w.admission));
      } catch (error) {
        for (const w of batch) w.reject(error);
        continue;
      }
      this.stats.batches++;
      this.stats.admissions += batch.length;
      this.stats.largest = Math.max(this.stats.largest, batch.length);
      batch.forEach((w, i) => w.resolve(results[i]!));
    }
  }
}
