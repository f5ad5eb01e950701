import type { Db } from 'mongodb'
import { systemClock, type Clock } from './clock.js'
import { CommandRepository } from './commands/command-repository.js'
import { FileRepository } from './files/file-repository.js'
import { ManagedStorage } from './files/managed-storage.js'
import type { Connections } from './connections.js'
import { planReader } from './accounts/account-repository.js'
import { DEFAULT_STORAGE_QUOTAS, StorageQuota, type StorageQuotas } from './files/storage-quota.js'
import type { AccountChanges } from './accounts/account-changes.js'

/**
 * The repositories the worker and deliverer roles of one process share: built
 * once, at the composition root (api/main.ts), and handed to each part that
 * reads or writes their collections. Tests build them the same way, and may
 * wrap them to stage a race from the outside (test/harness/interleaved.ts).
 */
export interface Repositories {
  commands: CommandRepository
  files: FileRepository
}

/** `changes`: where a deleted output of a finished command is announced to the API replicas (the retention sweep's deletions). */
export function buildRepositories(db: Db, storage: ManagedStorage, now: Clock = systemClock, storageQuotas: StorageQuotas = DEFAULT_STORAGE_QUOTAS, changes?: AccountChanges): Repositories {
  const commands = new CommandRepository(db, { changes, now })
  // Nobody here records a file waiting for the processor (the API does): nothing to nudge.
  return { commands, files: new FileRepository(db, storage, commands, now, () => {}, new StorageQuota(db, storageQuotas, planReader(db))) }
}

/** The repositories over a process's connections. */
export function repositoriesOf(connections: Pick<Connections, 'db' | 's3' | 's3Bucket'>, storageQuotas: StorageQuotas = DEFAULT_STORAGE_QUOTAS, changes?: AccountChanges): Repositories {
  return buildRepositories(connections.db, new ManagedStorage(connections.s3, connections.s3Bucket), systemClock, storageQuotas, changes)
}
