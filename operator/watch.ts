/**
 * A list+watch informer: lists, then watches from the list's resourceVersion,
 * keeps a cache, and never gives up quietly.
 *
 * Why not client-node's makeInformer/ListWatch (dist/cache.js in 1.4.0 and 2.0.1): it
 * relists on 410 Gone, but on any other watch or list error it only calls the
 * ERROR callbacks and stops for good — no retry, no backoff, no jitter, no
 * give-up signal — and its autostart runs an unawaited promise. The fix is a
 * wrapper that restarts it, which is this class with fewer guarantees; so
 * this class uses client-node's low-level Watch for the stream and owns the loop.
 *
 * Events: add/update/delete (objects), connect (a watch request is open), reconnect
 * (after an error, with the attempt and delay), give-up (maxFailures reached),
 * synced (the first list is in the cache).
 */
import { EventEmitter } from 'node:events'
import { Watch, type KubeConfig } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { jitteredDelay } from './backoff.js'
import { abortableSleep } from './sleep.js'

export interface ListResult<T> {
  items: T[]
  metadata?: { resourceVersion?: string }
}

export interface InformerOptions<T> {
  /** Names the informer in logs. */
  name: string
  kubeConfig: KubeConfig
  /** The collection's URL path, e.g. /apis/batch/v1/namespaces/ffkube/jobs. */
  path: string
  list: () => Promise<ListResult<T>>
  labelSelector?: string
  logger: Logger
  baseDelayMs?: number
  maxDelayMs?: number
  /** Consecutive failures before give-up; the default never gives up. */
  maxFailures?: number
  random?: () => number
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
}

/** A status the apiserver sends in-stream or as the HTTP answer. */
class WatchError extends Error {
  override name = 'WatchError'
  constructor(message: string, readonly code: number | undefined) {
    super(message)
  }
}

function statusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown }
  if (typeof e?.statusCode === 'number') return e.statusCode
  if (typeof e?.code === 'number') return e.code
  return undefined
}

function isQuietTimeout(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'TimeoutError'
}

/** What the informer reads of an object: its identity and version. */
export interface Versioned {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string } | undefined
}

function keyOf(obj: Versioned): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`
}

export class Informer<T extends Versioned> extends EventEmitter {
  private readonly cache = new Map<string, T>()
  private resourceVersion = ''
  private readonly stopController = new AbortController()
  private current: AbortController | undefined
  private loop: Promise<void> | undefined
  private synced = false
  private readonly options: Required<Omit<InformerOptions<T>, 'labelSelector'>> & { labelSelector?: string }

  constructor(options: InformerOptions<T>) {
    super()
    this.options = {
      baseDelayMs: 200, maxDelayMs: 30_000, maxFailures: Number.POSITIVE_INFINITY, random: Math.random, sleep: abortableSleep,
      ...options,
    }
  }

  /** Starts the loop; resolves once the first list is in the cache (or the informer stopped or gave up). */
  start(): Promise<void> {
    const synced = new Promise<void>((resolve) => {
      this.once('synced', resolve)
      this.once('give-up', () => resolve())
      this.stopController.signal.addEventListener('abort', () => resolve(), { once: true })
    })
    this.loop = this.run()
    return synced
  }

  /** Stops watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.stopController.abort()
    this.current?.abort()
    await this.loop
  }

  /** Drops the open connection as a network failure would; the informer reconnects by itself. */
  disconnect(): void {
    this.current?.abort()
  }

  /** True while a watch request is open. */
  get isConnected(): boolean {
    return this.current !== undefined
  }

  get hasSynced(): boolean {
    return this.synced
  }

  get(namespace: string, name: string): T | undefined {
    return this.cache.get(`${namespace}/${name}`)
  }

  list(): T[] {
    return [...this.cache.values()]
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) await this.relist()
        await this.watchOnce()
        // A clean close (the server's watch timeout) resumes from the last resourceVersion.
        failures = 0
      } catch (err) {
        if (this.stopped) return
        if (statusCode(err) === 410) {
          // Our resourceVersion fell out of the apiserver's window: list again from now.
          this.options.logger.info({ informer: this.options.name }, 'watch expired (410 Gone), relisting')
          this.resourceVersion = ''
          continue
        }
        failures++
        if (failures >= this.options.maxFailures) {
          this.options.logger.error({ informer: this.options.name, err, failures }, 'watch gave up')
          this.emit('give-up', err)
          return
        }
        const delayMs = jitteredDelay(failures, this.options.baseDelayMs, this.options.maxDelayMs, this.options.random)
        this.options.logger.warn({ informer: this.options.name, err: String(err), attempt: failures, delayMs }, 'watch failed, reconnecting')
        this.emit('reconnect', { attempt: failures, delayMs, error: err })
        await this.options.sleep(delayMs, this.stopController.signal)
      }
    }
  }

  /** Replaces the cache with a fresh list, emitting what changed since the last one (deletes missed while away included). */
  private async relist(): Promise<void> {
    const result = await this.options.list()
    const fresh = new Map(result.items.map((obj) => [keyOf(obj), obj]))
    for (const [key, old] of this.cache) {
      if (!fresh.has(key)) {
        this.cache.delete(key)
        this.emit('delete', old)
      }
    }
    for (const [key, obj] of fresh) this.upsert(key, obj)
    this.resourceVersion = result.metadata?.resourceVersion ?? ''
    if (!this.synced) {
      this.synced = true
      this.emit('synced')
    }
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key)
    this.cache.set(key, obj)
    if (!old) this.emit('add', obj)
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('update', obj, old)
  }

  private onEvent(type: string, obj: T & { code?: number; message?: string }): void {
    if (type === 'ERROR') throw new WatchError(obj.message ?? 'watch error', obj.code)
    if (type === 'BOOKMARK') {
      this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion
      return
    }
    const key = keyOf(obj)
    if (type === 'DELETED') {
      const old = this.cache.get(key)
      this.cache.delete(key)
      this.emit('delete', old ?? obj)
    } else {
      this.upsert(key, obj)
    }
    this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion
  }

  /** One watch request: resolves on a clean close, rejects with the error that ended it. */
  private watchOnce(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let failed: unknown
      const query: Record<string, string | number | boolean> = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        // Renew the request now and then, so a silently dead connection cannot last forever.
        timeoutSeconds: 240 + Math.floor(this.options.random() * 120),
      }
      if (this.options.labelSelector) query.labelSelector = this.options.labelSelector
      const onEvent = (type: string, obj: T & { code?: number; message?: string }): void => {
        if (failed) return
        try {
          this.onEvent(type, obj)
        } catch (err) {
          failed = err
          this.current?.abort()
        }
      }
      let opened = false
      const done = (err: unknown): void => {
        this.current = undefined
        const cause = failed ?? err
        // client-node 2.x ends an open watch that has been quiet for 30 s (watch.js requestTimeoutMs) with a
        // TimeoutError: a renewal like the server's own close, not a failure to back off from.
        if (cause && !(opened && failed === undefined && isQuietTimeout(err))) reject(cause)
        else resolve()
      }
      new Watch(this.options.kubeConfig)
        .watch(this.options.path, query, onEvent, done)
        .then((controller) => {
          if (this.stopped || controller.signal.aborted) return controller.abort()
          opened = true
          this.current = controller
          this.emit('connect')
        }, reject)
    })
  }
}
