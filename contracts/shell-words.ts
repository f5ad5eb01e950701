/**
 * Splits a command string into argv the way a POSIX shell splits words, and
 * does nothing else a shell does: no variables, no command substitution, no
 * globs, no `~`, no redirections, no `;`/`|`/`&` — those characters are kept
 * literally. The runner never hands a command string to a shell, so this
 * function *is* the shell's word splitting, and its only job is to agree with
 * what the user meant when they typed quotes and backslashes.
 */

/** A command string the splitter cannot read; `position` is a 0-based index. */
export class ShellSyntaxError extends Error {
  override readonly name = 'ShellSyntaxError'
  constructor(message: string, readonly position: number) {
    super(message)
  }
}

/** Characters that end an unquoted word (POSIX `<blank>` plus newline). */
const BLANKS = new Set([' ', '\t', '\n', '\r'])

/** Inside double quotes a backslash escapes only these (POSIX 2.2.3). */
const DQUOTE_ESCAPABLE = new Set(['$', '`', '"', '\\', '\n'])

/**
 * Splits `command` into words.
 *
 * - `'…'` keeps everything literally up to the next `'`.
 * - `"…"` keeps everything literally except `\$ \` \" \\` and `\<newline>`.
 * - outside quotes, `\x` is a literal `x` and `\<newline>` joins lines.
 * - an empty quoted string (`''`, `""`) is an empty word, as in a shell.
 *
 * Throws ShellSyntaxError on an unterminated quote or a trailing backslash,
 * because guessing would turn a typo into a different command.
 */
export function splitShellWords(command: string): string[] {
  const words: string[] = []
  let word = ''
  // A word exists once any character or quote pair was seen: `""` is a word.
  let inWord = false
  let i = 0
  while (i < command.length) {
    const c = command[i] as string
    if (BLANKS.has(c)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
      i++
      continue
    }
    if (c === '\\' && command[i + 1] === '\n') {
      // Backslash-newline is a line continuation: both characters vanish.
      i += 2
      continue
    }
    inWord = true
    if (c === "'") {
      const end = command.indexOf("'", i + 1)
      if (end < 0) throw new ShellSyntaxError(`unterminated single quote at position ${i}`, i)
      word += command.slice(i + 1, end)
      i = end + 1
    } else if (c === '"') {
      i = readDoubleQuoted(command, i, (text) => (word += text))
    } else if (c === '\\') {
      if (i + 1 >= command.length) throw new ShellSyntaxError(`trailing backslash at position ${i}`, i)
      word += command[i + 1] as string
      i += 2
    } else {
      word += c
      i++
    }
  }
  if (inWord) words.push(word)
  return words
}

/** Reads a double-quoted span starting at `start` (the `"`); returns the index after the closing quote. */
function readDoubleQuoted(command: string, start: number, append: (text: string) => void): number {
  let i = start + 1
  while (i < command.length) {
    const c = command[i] as string
    if (c === '"') return i + 1
    if (c === '\\' && i + 1 < command.length && DQUOTE_ESCAPABLE.has(command[i + 1] as string)) {
      const next = command[i + 1] as string
      if (next !== '\n') append(next)
      i += 2
      continue
    }
    append(c)
    i++
  }
  throw new ShellSyntaxError(`unterminated double quote at position ${start}`, start)
}
