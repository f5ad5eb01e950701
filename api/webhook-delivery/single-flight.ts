/**
 * Concurrent lookups of one key share one read: a burst of completions for an
 * account reads its webhook configuration once instead of once per command.
 * The shared read starts no earlier than the first caller asked, so nobody
 * gets an answer older than a read they could have made themselves.
 */
export class SingleFlight<V> {
  readonly #inFlight = new Map<string, Promise<V>>()

  constructor(private readonly load: (key: string) => Promise<V>) {}

  get(key: string): Promise<V> {
    const running = this.#inFlight.get(key)
    if (running) return running
    const started = this.load(key).finally(() => this.#inFlight.delete(key))
    this.#inFlight.set(key, started)
    return started
  }
}
