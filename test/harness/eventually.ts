/**
 * The one polling helper of the tests: asks `check` again until it returns a
 * value (anything but undefined, null or false), or fails after `timeoutMs`
 * saying what it waited for and the last error `check` threw. For waiting on
 * what must happen; absence is shown by waiting for an event that must come
 * after it, never by polling and giving up.
 */
export async function eventually<T>(what: string, check: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== null && value !== false) return value
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
