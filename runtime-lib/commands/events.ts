// Application events published by command handlers. Delivery happens only after the command's
// transaction commits (commands.ts hands over the batch then); a rollback drops the batch.

export interface AppEvent {
  name: string;
  payload: Record<string, unknown>;
  /** The command and trace that produced it. */
  source: { command: string; traceId?: string };
}

export type EventListener = (event: AppEvent) => void | Promise<void>;

export class EventBus {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Delivers committed events; a failing listener is reported and does not stop the others. */
  deliver(events: readonly AppEvent[], report: (err: unknown, event: AppEvent) => void): void {
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          const result = listener(event);
          if (result instanceof Promise) result.catch((err) => report(err, event));
        } catch (err) {
          report(err, event);
        }
      }
    }
  }
}
