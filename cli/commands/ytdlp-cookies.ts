/** `ffkube cookies get|set|delete`: the account's cookies.txt for its yt-dlp downloads (/ytdlp-cookies). */
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { expectData, type YtdlpCookies } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { EXIT, UsageError } from '../errors.js'
import { table } from '../format.js'

function shown(cookies: YtdlpCookies): string {
  return table([
    ['cookies', String(cookies.cookie_count)],
    ['domains', cookies.domains.join(', ')],
    ['updated', cookies.updated_at],
  ])
}

export async function getCookiesAction(context: CliContext, options: { json: boolean }): Promise<number> {
  const { client } = await context.connect()
  const cookies = expectData(await client.GET('/api/v1/ytdlp-cookies', { signal: context.signal }))
  context.out(options.json ? `${JSON.stringify(cookies, null, 2)}\n` : shown(cookies))
  return EXIT.OK
}

/** Reads the file (`-`: stdin) and uploads it; never prints a cookie, only what the API shows. */
export async function setCookiesAction(context: CliContext, file: string): Promise<number> {
  let cookies: string
  if (file === '-') {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    cookies = Buffer.concat(chunks).toString('utf8')
  } else {
    cookies = await readFile(resolve(context.cwd, file), 'utf8').catch(() => {
      throw new UsageError(`${file}: cannot read it`)
    })
  }
  const { client } = await context.connect()
  const stored = expectData(await client.PUT('/api/v1/ytdlp-cookies', { body: { cookies }, signal: context.signal }))
  context.out(`cookies stored for yt-dlp\n${shown(stored)}`)
  return EXIT.OK
}

export async function deleteCookiesAction(context: CliContext): Promise<number> {
  const { client } = await context.connect()
  expectData(await client.DELETE('/api/v1/ytdlp-cookies', { signal: context.signal }))
  context.out('cookies deleted; yt-dlp downloads run without cookies\n')
  return EXIT.OK
}
