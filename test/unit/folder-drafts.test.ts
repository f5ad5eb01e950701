import t from 'tap'
import { DEFAULT_COMMAND_LIMITS, folderLimits } from '../../api/commands/command-limits.js'
import { toCommandSpec, newCommandDocument } from '../../api/commands/command-document.js'
import { draftChained, draftFfmpegCommand, draftMultiple } from '../../api/commands/drafts.js'
import { loadConfig } from '../../api/config.js'
import { InvalidRequestError, ValidationError } from '../../api/errors/api-errors.js'

const FOLDER = 'https://files.example.com/assets.zip'
const BESIDE = {
  input_files: { in_video: 'https://files.example.com/a.mp4' },
  input_compressed_folder: FOLDER,
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}}',
}

t.test('a folder beside input_files is kept on the draft and in original_request', async (t) => {
  const draft = draftFfmpegCommand(BESIDE)
  t.equal(draft.input_compressed_folder, FOLDER)
  t.same(draft.original_request, { input_files: BESIDE.input_files, input_compressed_folder: FOLDER, output_files: BESIDE.output_files, ffmpeg_command: BESIDE.ffmpeg_command })
  const chained = draftChained({ ...BESIDE, ffmpeg_command: undefined, ffmpeg_commands: [BESIDE.ffmpeg_command] } as never)
  t.equal(chained.original_request.input_compressed_folder, FOLDER)
})

t.test('a command without a folder records none', async (t) => {
  const { input_compressed_folder: _folder, ...plain } = BESIDE
  const draft = draftFfmpegCommand(plain)
  t.notOk('input_compressed_folder' in draft)
  t.notOk('input_compressed_folder' in draft.original_request)
})

t.test('input_files may be left out only when a folder comes', async (t) => {
  const { input_files: _inputs, ...folderOnly } = BESIDE
  t.throws(() => draftFfmpegCommand({ ...folderOnly, input_compressed_folder: undefined }), { constructor: InvalidRequestError, message: /^input_files is required \(unless input_compressed_folder is given\)$/ })
  t.throws(
    () => draftMultiple({ commands: [BESIDE, { ...folderOnly, input_compressed_folder: undefined } as never] }),
    { constructor: ValidationError, message: /^commands\[1\]\.input_files is required/ },
    'inside a multiple request it is 422 naming the command',
  )
})

t.test('the folder URL is checked like an input URL: 422 naming the field', async (t) => {
  t.throws(() => draftFfmpegCommand({ ...BESIDE, input_compressed_folder: 'ftp://files.example.com/a.zip' }), { constructor: ValidationError, message: /^input_compressed_folder: must use http or https, not ftp$/ })
  t.throws(() => draftMultiple({ commands: [{ ...BESIDE, input_compressed_folder: 'https://user:pw@files.example.com/a.zip' }] }), { constructor: ValidationError, message: /^commands\[0\]\.input_compressed_folder: / }, "the schema's own check, naming the field")
})

t.test('the spec the runner receives carries the folder, whether it is managed, and the plan caps', async (t) => {
  const draft = draftFfmpegCommand(BESIDE)
  const limits = { maxRunSeconds: 300, vcpuMillis: 1000, memoryMib: 1024, folder: folderLimits('free', DEFAULT_COMMAND_LIMITS) }
  const doc = newCommandDocument(draft, { commandId: 'c1', accountId: 'a1', managedCompressedFolder: true, limits }, new Date())
  t.match(toCommandSpec(doc), { inputCompressedFolder: FOLDER, managedCompressedFolder: true, limits: { folder: { maxBytes: 256 * 1024 ** 2, maxEntries: 1000, maxRatio: 50 } } })
  const plain = newCommandDocument(draftFfmpegCommand({ ...BESIDE, input_compressed_folder: undefined }), { commandId: 'c2', accountId: 'a1' }, new Date())
  t.notOk('inputCompressedFolder' in toCommandSpec(plain), 'no folder, no field')
})

t.test('folder caps grow with the plan and are configurable per plan', async (t) => {
  const [free, business] = [folderLimits('free', DEFAULT_COMMAND_LIMITS), folderLimits('business', DEFAULT_COMMAND_LIMITS)]
  t.ok(free.maxBytes < business.maxBytes && free.maxEntries < business.maxEntries && free.maxRatio < business.maxRatio)
  const config = loadConfig({ COMMAND_FOLDER_MAX_BYTES_TRIAL: '1000', COMMAND_FOLDER_MAX_ENTRIES_TRIAL: '5', COMMAND_FOLDER_MAX_RATIO_TRIAL: '20' })
  t.same(config.commandLimits.trial.folder, { maxBytes: 1000, maxEntries: 5, maxRatio: 20 })
  t.throws(() => loadConfig({ COMMAND_FOLDER_MAX_ENTRIES_FREE: '0' }), { message: /COMMAND_FOLDER_MAX_ENTRIES_FREE must be a whole number of at least 1/ })
})
