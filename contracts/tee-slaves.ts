/**
 * The tee muxer's output word, `[f=mp4]a.mp4|[f=hls:hls_time=1]b.m3u8`: its
 * slaves, each with its options and its target. FFmpeg 8.1's tee.c splits the
 * word with av_get_token (`|`, honouring `\` escapes and `'` quotes) and each
 * slave's `[k=v:k=v]` with av_opt_get_key_value (tee_common.c). This parser
 * reads only the plain subset, without escapes, quotes or spaces, and refuses
 * the rest, so it can never split a word differently from ffmpeg. Pure.
 */

export interface TeeSlave {
  /** In order, as written inside the brackets. */
  options: Array<[string, string]>
  target: string
}

export class TeeSyntaxError extends Error {
  override name = 'TeeSyntaxError'
}

/** Most slaves one tee output may have. */
export const MAX_TEE_SLAVES = 16

const OPTION = /^([A-Za-z0-9_][A-Za-z0-9_/.-]*)=([^=]+)$/

export function parseTeeSlaves(word: string): TeeSlave[] {
  if (/[\\'"\s]/.test(word)) throw new TeeSyntaxError('a tee output may not hold backslashes, quotes or spaces')
  const parts = word.split('|')
  if (parts.length > MAX_TEE_SLAVES) throw new TeeSyntaxError(`a tee output may have at most ${MAX_TEE_SLAVES} slaves`)
  return parts.map((part) => {
    let options: Array<[string, string]> = []
    let target = part
    if (part.startsWith('[')) {
      const close = part.indexOf(']')
      if (close < 0) throw new TeeSyntaxError(`"${part}": the options of a slave end with ]`)
      const inside = part.slice(1, close)
      target = part.slice(close + 1)
      options = inside === '' ? [] : inside.split(':').map((pair) => {
        const match = OPTION.exec(pair)
        if (!match) throw new TeeSyntaxError(`"${pair}": a slave option is key=value`)
        return [match[1] as string, match[2] as string]
      })
    }
    if (target === '') throw new TeeSyntaxError(`"${part}": a slave names no output`)
    if (/[[\]]/.test(target)) throw new TeeSyntaxError(`"${part}": brackets belong before a slave's output only`)
    return { options, target }
  })
}

/** The word ffmpeg gets back, with each slave's options and target as given. */
export function formatTeeSlaves(slaves: readonly TeeSlave[]): string {
  return slaves.map(({ options, target }) => (options.length > 0 ? `[${options.map(([k, v]) => `${k}=${v}`).join(':')}]` : '') + target).join('|')
}
