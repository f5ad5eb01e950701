/**
 * The admin CLI (DESIGN.md): `npm run -s admin -- <command> [--option value]…`.
 * Prints one JSON object on stdout and exits 0; on failure prints the reason
 * on stderr and exits 1 (could not be done) or 2 (bad command line).
 */
import { parseArgs } from 'node:util'
import type { NatsConnection } from 'nats'
import { AccountChanges } from '../accounts/account-changes.js'
import { AccountRepository, planReader } from '../accounts/account-repository.js'
import { fileHoldings } from '../files/file-holdings.js'
import { StorageQuota } from '../files/storage-quota.js'
import { ConfigError, loadConfig } from '../config.js'
import { parseEncryptionKeys, SecretBox } from '../crypto/secret-box.js'
import { SignInLinkRepository } from '../console/sign-in-link-repository.js'
import { ADMIN_COMMANDS, AdminError, usage, UsageError, type AdminOptions } from './admin-commands.js'
import { openAdminDatabase } from './admin-database.js'
import { connectAdminNats } from './admin-nats.js'

const stderrLog = { warn: (_details: object, message: string) => process.stderr.write(`ffkube admin: ${message}\n`) }

function parseCommandLine(argv: string[]): { name: string; options: AdminOptions } {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { plan: { type: 'string' }, name: { type: 'string' }, account: { type: 'string' }, key: { type: 'string' }, 'base-url': { type: 'string' }, 'settle-seconds': { type: 'string' } },
    })
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  const [name, ...rest] = parsed.positionals
  if (!name) throw new UsageError('no command given')
  if (!ADMIN_COMMANDS[name]) throw new UsageError(`unknown command "${name}"`)
  if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`)
  return { name, options: parsed.values }
}

async function main(argv: string[]): Promise<number> {
  let database
  let nats: NatsConnection | undefined
  try {
    const { name, options } = parseCommandLine(argv)
    const config = loadConfig()
    database = await openAdminDatabase(config)
    const db = database.client.db(config.mongodbDatabase)
    nats = await connectAdminNats(config)
    const changes = await AccountChanges.open(nats, stderrLog, { listen: false })
    const accounts = new AccountRepository(db, new SecretBox(parseEncryptionKeys(database.encryptionKeys)), changes)
    const signInLinks = new SignInLinkRepository(db)
    await Promise.all([accounts.ensureIndexes(), signInLinks.ensureIndexes()])
    const defaultBaseUrl = `http://127.0.0.1:${config.port || 8080}`
    const storage = { quota: new StorageQuota(db, config.storageQuotas, planReader(db)), fileHoldings: fileHoldings(db) }
    const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
    const result = await ADMIN_COMMANDS[name]!.run({ accounts, signInLinks, storage, sleep, defaultBaseUrl, now: () => new Date() }, options)
    process.stdout.write(`${JSON.stringify(result)}\n`)
    return 0
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`ffkube admin: ${err.message}\n${usage()}\n`)
      return 2
    }
    if (err instanceof ConfigError || err instanceof AdminError) {
      process.stderr.write(`ffkube admin: ${err.message}\n`)
      return 1
    }
    process.stderr.write(`ffkube admin failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    return 1
  } finally {
    await nats?.close()
    await database?.close()
  }
}

process.exitCode = await main(process.argv.slice(2))
