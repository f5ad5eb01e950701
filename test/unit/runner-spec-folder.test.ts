import t from 'tap'
import { parseCommandSpec, SpecError } from '../../runner-image/runner/spec.js'

const base = { commandId: 'c1', accountId: 'a1', commandType: 'FFMPEG_COMMAND', inputFiles: {}, outputFiles: { out_x: 'x.mp4' }, ffmpegCommands: ['ffmpeg -i a.mp4 {{out_x}}'] }
const limits = { maxRunSeconds: 300, vcpuMillis: 1000, memoryMib: 1024, folder: { maxBytes: 1000, maxEntries: 5, maxRatio: 50 } }

t.test('the runner reads the folder, whether it is managed, and its caps from the spec', async (t) => {
  const spec = parseCommandSpec(JSON.stringify({ ...base, inputCompressedFolder: 'https://files.example.com/a.zip', managedCompressedFolder: true, limits }))
  t.match(spec, { inputCompressedFolder: 'https://files.example.com/a.zip', managedCompressedFolder: true, limits })
  const plain = parseCommandSpec(JSON.stringify(base))
  t.notOk('inputCompressedFolder' in plain || 'limits' in plain, 'no folder, no limits: nothing invented')
})

t.test('refuses a folder or cap of the wrong shape rather than unpacking without a cap', async (t) => {
  t.throws(() => parseCommandSpec(JSON.stringify({ ...base, inputCompressedFolder: 42 })), { constructor: SpecError, message: /inputCompressedFolder must be a string/ })
  t.throws(() => parseCommandSpec(JSON.stringify({ ...base, limits: { ...limits, folder: { ...limits.folder, maxEntries: 0 } } })), { constructor: SpecError, message: /limits\.folder\.maxEntries must be a positive whole number/ })
  t.throws(() => parseCommandSpec(JSON.stringify({ ...base, limits: { ...limits, folder: { ...limits.folder, maxBytes: '1000' } } })), { message: /limits\.folder\.maxBytes/ })
})
