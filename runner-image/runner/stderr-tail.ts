/** The end of a tool's stderr, where ffmpeg and yt-dlp say what went wrong: the part of it a FAILED event quotes. */
export function lastLines(stderr: string, lines = 4, chars = 800): string {
  const tail = stderr.trim().split('\n').slice(-lines).join(' | ')
  return tail.length > chars ? `…${tail.slice(-chars)}` : tail
}
