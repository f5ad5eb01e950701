import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../duplicate-key.js'

/**
 * One attempt's lease, keyed `<command id>:<attempts>` (a takeover appends
 * `~`): its unique _id is what makes a claim exclusive.
 */
export interface DispatchLease {
  _id: string
  command_id: string
  expires_at: Date
}

/** A lease this dispatcher now holds; `takeover` when it succeeds one that expired. */
export interface TakenLease {
  taken: true
  key: string
  takeover: boolean
  expires_at: Date
}

/** Someone else holds the attempt until `until`. */
export interface HeldLease {
  taken: false
  until: Date
}

/**
 * The dispatch leases. A lease is never released: it stays until the
 * recovery scan prunes it, long after its command left the queue. That is
 * what lets a claim trust the candidate it read: a stale candidate (an
 * attempt some dispatcher already finished) meets the finished attempt's
 * lease and fails on the duplicate key, so a fresh insert proves nobody has
 * touched that attempt, and only a takeover has to re-read the entry. It also
 * saves the release's delete on every hand-off.
 */
export class DispatchLeases {
  readonly #leases: Collection<DispatchLease>

  constructor(db: Db) {
    this.#leases = db.collection<DispatchLease>('dispatch_leases')
  }

  /**
   * Takes the lease on attempt `attempts` of a command. When the key is held
   * by a lease that has expired (its holder died before moving the entry on),
   * takes over with a successor key (`…~`): again a unique insert, so exactly
   * one of several dispatchers wins the takeover. (Deleting the dead lease and
   * re-inserting would not do: FerretDB's filtered delete could remove the
   * winner's fresh lease.)
   */
  async take(commandId: string, attempts: number, now: Date, leaseMs: number): Promise<TakenLease | HeldLease> {
    const lease: DispatchLease = { _id: `${commandId}:${attempts}`, command_id: commandId, expires_at: new Date(now.getTime() + leaseMs) }
    for (let depth = 0; depth < 8; depth++) {
      try {
        await this.#leases.insertOne(lease)
        return { taken: true, key: lease._id, takeover: depth > 0, expires_at: lease.expires_at }
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
      }
      // Read only on a collision: the insert alone decides the common case.
      const held = await this.#leases.findOne({ _id: lease._id })
      if (held && held.expires_at > now) return { taken: false, until: held.expires_at }
      lease._id = `${lease._id}~`
    }
    return { taken: false, until: lease.expires_at }
  }

  /**
   * Deletes the leases of commands that have left the queue (`queued` holds
   * the ids still in it) and whose every lease expired more than `graceMs`
   * ago; returns how many. A command's leases go together or not at all: a
   * dispatcher acting on a candidate read before the command's last holder
   * moved the entry on must still meet that holder's key, which the grace
   * (longer than a candidate is trusted, see Dispatcher) guarantees. Two
   * full scans on FerretDB 1.x, hence only in the recovery scan.
   */
  async prune(queued: ReadonlySet<string>, now: Date, graceMs: number): Promise<number> {
    const cutoff = now.getTime() - graceMs
    const byCommand = new Map<string, { ids: string[]; latest: number }>()
    for await (const lease of this.#leases.find({}, { projection: { _id: 1, command_id: 1, expires_at: 1 } })) {
      const seen = byCommand.get(lease.command_id) ?? { ids: [], latest: -Infinity }
      seen.ids.push(lease._id)
      seen.latest = Math.max(seen.latest, lease.expires_at.getTime())
      byCommand.set(lease.command_id, seen)
    }
    // By the _ids read, not by command_id: a lease inserted since the read is not this scan's to judge.
    const prunable = [...byCommand].filter(([commandId, seen]) => seen.latest < cutoff && !queued.has(commandId)).flatMap(([, seen]) => seen.ids)
    let deleted = 0
    for (let i = 0; i < prunable.length; i += 5_000) {
      deleted += (await this.#leases.deleteMany({ _id: { $in: prunable.slice(i, i + 5_000) } })).deletedCount
    }
    return deleted
  }
}
