/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
 * acquire when the Lease is free or its holder stopped renewing, renew every
 * retry period, give up leadership when renewals fail for renewDeadline (before
 * the Lease can expire for others, so two replicas never both act), release
 * on shutdown so a successor need not wait out the Lease.
 *
 * Expiry is judged by when *this* replica last saw the Lease change (its own
 * clock), never by the holder's renewTime, so clock skew between nodes cannot
 * hand out the Lease early.
 */
import { EventEmitter } from 'node:events'
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { describeError, isConflict, isNotFound } from './kube-errors.js'
import { abortableSleep } from './sleep.js'

export interface LeaderElectorOptions {
  api: CoordinationV1Api
  namespace: string
  name: string
  identity: string
  leaseDurationMs: number
  renewDeadlineMs: number
  retryPeriodMs: number
  logger: Logger
  clock?: () => number
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
}

/** Emits `started-leading`, `stopped-leading` and `new-leader` (identity). */
export class LeaderElector extends EventEmitter {
  private leading = false
  private observed: { holder: string; resourceVersion: string } | undefined
  private observedAt = 0
  private lastRenew = 0
  private readonly clock: () => number
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>

  constructor(private readonly o: LeaderElectorOptions) {
    super()
    this.clock = o.clock ?? Date.now
    this.sleep = o.sleep ?? abortableSleep
  }

  get isLeader(): boolean {
    return this.leading
  }

  /**
   * Acquires, then renews until `signal` aborts or a renewal deadline passes.
   * Resolves after leadership ended (released when aborted).
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !(await this.attempt())) {
      await this.sleep(this.o.retryPeriodMs, signal)
    }
    if (signal.aborted) return
    this.setLeading(true)
    while (!signal.aborted) {
      await this.sleep(this.o.retryPeriodMs, signal)
      if (signal.aborted) break
      if (await this.attempt()) continue
      if (this.clock() - this.lastRenew >= this.o.renewDeadlineMs) {
        this.o.logger.error({ lease: this.o.name }, 'could not renew the lease in time, stepping down')
        this.setLeading(false)
        return
      }
    }
    await this.release()
  }

  /** One try to acquire or renew; false on any failure (retried on the next period). */
  async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew()
    } catch (err) {
      this.o.logger.warn({ lease: this.o.name, err: describeError(err) }, 'lease attempt failed')
      return false
    }
  }

  private spec(now: number, previous: V1Lease | undefined): V1Lease['spec'] {
    const prev = previous?.spec
    const mine = prev?.holderIdentity === this.o.identity
    return {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      acquireTime: mine && prev?.acquireTime ? prev.acquireTime : new V1MicroTime(now),
      renewTime: new V1MicroTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (mine || !previous ? 0 : 1),
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock()
    let lease: V1Lease
    try {
      lease = await this.o.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace })
    } catch (err) {
      if (!isNotFound(err)) throw err
      try {
        await this.o.api.createNamespacedLease({
          namespace: this.o.namespace,
          body: { metadata: { name: this.o.name, namespace: this.o.namespace }, spec: this.spec(now, undefined) },
        })
      } catch (createErr) {
        if (isConflict(createErr)) return false
        throw createErr
      }
      this.lastRenew = now
      return true
    }
    const holder = lease.spec?.holderIdentity ?? ''
    const resourceVersion = lease.metadata?.resourceVersion ?? ''
    if (!this.observed || this.observed.holder !== holder || this.observed.resourceVersion !== resourceVersion) {
      if (this.observed?.holder !== holder && holder) this.emit('new-leader', holder)
      this.observed = { holder, resourceVersion }
      this.observedAt = now
    }
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000
    if (holder && holder !== this.o.identity && this.observedAt + durationMs > now) return false
    try {
      const updated = await this.o.api.replaceNamespacedLease({
        name: this.o.name,
        namespace: this.o.namespace,
        // resourceVersion makes this a compare-and-swap: of two replicas racing, one wins.
        body: { metadata: { ...lease.metadata }, spec: this.spec(now, lease) },
      })
      this.observed = { holder: this.o.identity, resourceVersion: updated.metadata?.resourceVersion ?? '' }
      this.observedAt = now
    } catch (err) {
      if (isConflict(err)) return false
      throw err
    }
    this.lastRenew = now
    return true
  }

  /** Hands the Lease back (holder cleared, 1 s duration) so the next replica takes over at once. */
  async release(): Promise<void> {
    if (!this.leading) return
    this.setLeading(false)
    try {
      const lease = await this.o.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace })
      if (lease.spec?.holderIdentity !== this.o.identity) return
      await this.o.api.replaceNamespacedLease({
        name: this.o.name,
        namespace: this.o.namespace,
        body: {
          metadata: { ...lease.metadata },
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(this.clock()) },
        },
      })
    } catch (err) {
      this.o.logger.warn({ lease: this.o.name, err: describeError(err) }, 'could not release the lease; it expires by itself')
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return
    this.leading = leading
    this.o.logger.info({ lease: this.o.name, identity: this.o.identity }, leading ? 'became leader' : 'stopped leading')
    this.emit(leading ? 'started-leading' : 'stopped-leading')
  }
}
