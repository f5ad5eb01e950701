/** `ffkube upload <file>`: POST /files/upload, then (unless --no-wait) the file's storage_url once STORED, and when retention deletes it. */
import { openAsBlob } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { uploadFile, waitForFile } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { CliError, EXIT, UsageError } from '../errors.js'

export async function uploadAction(context: CliContext, file: string, options: { wait: boolean; json: boolean }): Promise<number> {
  const path = resolve(context.cwd, file)
  const found = await stat(path).catch(() => null)
  if (!found?.isFile()) throw new UsageError(`${file}: no such file`)
  const { client } = await context.connect()
  const { file_id } = await uploadFile(client, await openAsBlob(path), basename(path))
  if (!options.wait) {
    context.out(options.json ? `${JSON.stringify({ file_id })}\n` : `${file_id}\n`)
    return EXIT.OK
  }
  const stored = await waitForFile(client, file_id, (ms) => context.sleep(ms, context.signal))
  if (options.json) context.out(`${JSON.stringify(stored, null, 2)}\n`)
  if (stored.status !== 'STORED') throw new CliError(`${file_id} ${stored.status}: ${stored.error_status ?? ''} ${stored.error_message ?? ''}`.trim(), EXIT.FAILED)
  if (!options.json) context.out(`${file_id}  ${stored.storage_url ?? ''}${stored.expires_at ? `  expires ${stored.expires_at}` : ''}\n`)
  return EXIT.OK
}
