import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import t from 'tap'
import type { StatusEvent } from '../../contracts/status-events.js'
import { checkoutPath } from '../harness/checkout.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf } from './harness.js'

// npm test builds with tsc before tap runs; this test exercises the built entrypoint as the executor will.
const MAIN = checkoutPath('dist', 'runner-image', 'runner', 'main.js')

function runProcess(args: string[], stdin: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(stdin)
  })
}

t.test('the built runner reads a spec on stdin and writes events as JSON lines on stdout', { skip: existsSync(MAIN) ? false : 'run tsc first' }, async (t) => {
  const dir = await scratchDir(t)
  const spec = specOf({ inputFiles: { in_a: 'http://127.0.0.1:9/a.mp4' }, outputFiles: { out_b: 'b.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_a}} -f concat {{out_b}}'] })
  const result = await runProcess(['--spec', '-', '--work-dir', dir], JSON.stringify(spec), { PATH: process.env.PATH, LOG_LEVEL: 'info' })
  t.equal(result.code, 1, result.stderr)
  const events = result.stdout.trim().split('\n').filter((line) => !line.startsWith('{"log_chunk"')).map((line) => JSON.parse(line) as StatusEvent)
  t.match(events.at(-1), { type: 'FAILED', command_id: spec.commandId, error_status: 'INVALID_COMMAND', error_message: /-f concat is not an allowed output format/ })
  const logLines = result.stderr.trim().split('\n').map((line) => JSON.parse(line) as { command_id?: string; msg: string })
  t.ok(logLines.some((line) => line.command_id === spec.commandId && line.msg === 'command failed'), 'pino logs carry the command_id')
})

t.test('the built runner exits 2 without a work directory', { skip: existsSync(MAIN) ? false : 'run tsc first' }, async (t) => {
  const result = await runProcess(['--spec', '-'], '{}', { PATH: process.env.PATH })
  t.equal(result.code, 2)
  t.match(result.stderr, /no work directory/)
  t.equal(result.stdout, '')
})

t.test('the built runner exits 2 on a bad configuration, naming the variable', { skip: existsSync(MAIN) ? false : 'run tsc first' }, async (t) => {
  const dir = await scratchDir(t)
  const result = await runProcess(['--work-dir', dir], '{}', { PATH: process.env.PATH, FFKUBE_STATUS_REPORTER: 'carrier-pigeon' })
  t.equal(result.code, 2)
  t.match(result.stderr, /FFKUBE_STATUS_REPORTER must be stdout or nats/)
})
