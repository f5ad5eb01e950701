import t from 'tap'
import { usageByDay } from '../../api/usage/usage-report.js'

const at = (iso: string) => new Date(iso)
const MB = 1024 * 1024

t.test('usage by UTC day: commands on the day submitted, storage as it stood at each day\'s end', async (t) => {
  const report = usageByDay({
    now: at('2026-03-03T12:00:00Z'),
    days: 3,
    commands: [
      { created_at: at('2026-02-28T23:59:59Z'), status: 'SUCCESS', total_processing_seconds: 99, ffmpeg_command_run_seconds: 99 }, // before the window
      { created_at: at('2026-03-01T00:00:00Z'), status: 'SUCCESS', total_processing_seconds: 2.5, ffmpeg_command_run_seconds: 2 },
      { created_at: at('2026-03-01T23:59:59Z'), status: 'FAILED', total_processing_seconds: 0.5, ffmpeg_command_run_seconds: null },
      { created_at: at('2026-03-03T11:00:00Z'), status: 'PROCESSING', total_processing_seconds: null, ffmpeg_command_run_seconds: null },
    ],
    files: [
      { created_at: at('2026-02-20T00:00:00Z'), deleted_at: null, size_mbytes: 1 }, // from before, still there
      { created_at: at('2026-03-01T10:00:00Z'), deleted_at: at('2026-03-02T10:00:00Z'), size_mbytes: 2 }, // gone on day 2
      { created_at: at('2026-03-02T10:00:00Z'), deleted_at: null, size_mbytes: 4 },
      { created_at: at('2026-03-03T13:00:00Z'), deleted_at: null, size_mbytes: 8 }, // after now: not yet
    ],
  })
  t.equal(report.from, '2026-03-01T00:00:00.000Z')
  t.equal(report.to, '2026-03-03T12:00:00.000Z')
  t.same(report.by_day.map((d) => d.date), ['2026-03-01', '2026-03-02', '2026-03-03'])
  t.same(report.by_day.map((d) => d.commands), [2, 0, 1])
  t.same(report.by_day.map((d) => [d.commands_succeeded, d.commands_failed]), [[1, 1], [0, 0], [0, 0]])
  t.same(report.by_day.map((d) => d.ffmpeg_seconds), [2, 0, 0])
  t.same(report.by_day.map((d) => d.total_seconds), [3, 0, 0])
  t.same(report.by_day.map((d) => d.bytes_stored), [3 * MB, 5 * MB, 5 * MB])
  t.same(report.by_day.map((d) => d.files_stored), [2, 2, 2])
  t.same(report.totals, { commands: 3, commands_succeeded: 1, commands_failed: 1, ffmpeg_seconds: 2, total_seconds: 3 })
})
