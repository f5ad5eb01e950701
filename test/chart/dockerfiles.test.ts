/**
 * The two Dockerfiles, checked without Docker (none runs here): BuildKit's own
 * checks (`docker build --check`, through scripts/toolchain/dockerfile-lint),
 * then our rules: multi-stage, base images pinned by exact tag or digest, a non-root numeric
 * USER that the chart's runAsUser matches, no piping downloads into a shell,
 * the runner's yt-dlp pinned to the version scripts/provision.sh tests with,
 * and the paths the operator and the chart run actually built into the image.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { loadYaml } from '@kubernetes/client-node'
import { toolCacheDir } from '../../api/local/tools.js'
import { RUNNER_NODE_FLAGS } from '../../contracts/runner-node-flags.js'
import { loadOperatorConfig } from '../../operator/config.js'
import { parseDockerfile, stages } from './dockerfile.js'

const PINNED_TAG = /^[a-z0-9.\-/]+:(\d+\.\d+\.\d+)[\w.-]*$/
const DIGEST = /@sha256:[a-f0-9]{64}$/

const DOCKERFILES = ['Dockerfile', 'runner-image/Dockerfile']

t.test("BuildKit's Dockerfile checks find nothing", async (t) => {
  const lint = join(toolCacheDir(), 'bin', 'dockerfile-lint')
  t.ok(existsSync(lint), `dockerfile-lint is provisioned at ${lint} (scripts/provision.sh test)`)
  const result = await promisify(execFile)(lint, DOCKERFILES).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? -1, stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  )
  t.equal(result.stdout.trim(), '', 'no warnings')
  t.equal(result.code, 0)
})

for (const path of DOCKERFILES) {
  t.test(`${path}: pinned, multi-stage, non-root, no piped installers`, async (t) => {
    const instructions = parseDockerfile(await readFile(path, 'utf8'))
    const { stages: all } = stages(instructions)
    t.ok(all.length >= 2, 'multi-stage: build tools stay out of the runtime image')
    const names = new Set(all.map((s) => s.name).filter(Boolean))
    for (const stage of all) {
      // A stage of this file, or scratch (the empty image, nothing pulled).
      if (names.has(stage.image) || stage.image === 'scratch') continue
      t.ok(PINNED_TAG.test(stage.image) || DIGEST.test(stage.image), `FROM ${stage.image}: an exact version tag or a digest`)
      t.notMatch(stage.image, /:latest$|^[^:@]+$/, `FROM ${stage.image}: never latest or untagged`)
    }
    const final = all.at(-1)!
    const users = final.instructions.filter((i) => i.keyword === 'USER')
    t.ok(users.length > 0, 'the runtime stage sets USER')
    const user = users.at(-1)?.args ?? ''
    t.match(user, /^\d+(:\d+)?$/, 'USER is numeric, so runAsNonRoot can verify it')
    t.notMatch(user, /^0(:|$)|^root/, 'USER is not root')
    for (const ins of instructions) {
      t.notMatch(ins.args, /\b(curl|wget)\b[^|]*\|\s*(ba|da|z)?sh\b/, `line ${ins.line}: no download piped into a shell`)
      if (ins.keyword === 'ADD') t.notMatch(ins.args, /https?:\/\//, `line ${ins.line}: no ADD of a URL`)
      if (/apt-get install/.test(ins.args)) t.match(ins.args, /--no-install-recommends/, `line ${ins.line}: apt-get install without recommends`)
      t.not(ins.keyword, 'MAINTAINER', `line ${ins.line}: MAINTAINER is deprecated`)
    }
    const finalRuns = final.instructions.filter((i) => i.keyword === 'RUN' && /apt-get install/.test(i.args))
    for (const run of finalRuns) t.match(run.args, /rm -rf \/var\/lib\/apt\/lists/, `line ${run.line}: apt lists removed in the runtime image`)
    t.ok(final.instructions.some((i) => i.keyword === 'ENTRYPOINT' || i.keyword === 'CMD'), 'the runtime stage says what it runs')
    t.match(user, /^65532(:65532)?$/, "USER 65532: the chart's runAsUser and the operator's RUNNER_UID default")
  })
}

t.test('runner image: yt-dlp pinned to the version the tests run, installed where the operator runs it', async (t) => {
  const dockerfile = await readFile('runner-image/Dockerfile', 'utf8')
  const provision = await readFile('scripts/provision.sh', 'utf8')
  const pinned = /^YTDLP_VERSION=(\S+)$/m.exec(provision)?.[1]
  t.ok(pinned, 'scripts/provision.sh pins yt-dlp')
  t.match(dockerfile, new RegExp(`^ARG YTDLP_VERSION=${pinned!.replace(/\./g, '\\.')}$`, 'm'), `the image installs yt-dlp ${pinned}`)
  t.match(dockerfile, /"yt-dlp==\$\{YTDLP_VERSION\}"/, 'from PyPI at exactly that version')
  // operator/config.ts's default RUNNER_COMMAND, the chart's runners.command and the image's entrypoint: one command.
  const command = ['node', ...RUNNER_NODE_FLAGS, '/app/dist/runner-image/runner/main.js']
  const values = loadYaml<{ runners: { command: string[]; uid: number } }>(await readFile('charts/ffkube/values.yaml', 'utf8'))
  t.same(values.runners.command, command, "the chart's runners.command")
  t.same(loadOperatorConfig({}).job.runnerCommand, command, "the operator's default")
  t.match(dockerfile, new RegExp(`^ENTRYPOINT ${JSON.stringify(command).replace(/[[\]]/g, '\\$&').replace(/,/g, ', ')}$`, 'm'), "the image's entrypoint")
  t.match(dockerfile, /^WORKDIR \/app$/m)
  t.match(dockerfile, /&& node dist\/runner-image\/bundle\.js dist bundle \\$/m, 'the build stage bundles the compiled runner (runner-image/bundle.ts)')
  t.match(dockerfile, /^COPY --from=build \/src\/bundle \.\/dist\/runner-image$/m, 'the bundled runner lands in /app/dist/runner-image, where the entrypoint runs main.js')
  t.equal(values.runners.uid, 65532)
  t.match(dockerfile, /TMPDIR=\/work\/\.tmp/, 'temporary files under the writable /work, as operator/job-builder.ts sets')
  t.match(dockerfile, /HOME=\/work\/\.home/)
})

for (const path of DOCKERFILES) {
  t.test(`${path}: ffmpeg and ffprobe are the build scripts/provision.sh makes, by the same script`, async (t) => {
    const dockerfile = await readFile(path, 'utf8')
    const provision = await readFile('scripts/provision.sh', 'utf8')
    t.match(provision, /bash "\$script" "\$dir\.tmp"/, 'provision.sh runs scripts/ffmpeg/build-ffmpeg.sh')
    t.match(dockerfile, /^COPY scripts\/ffmpeg\/build-ffmpeg\.sh \/src\/build-ffmpeg\.sh$/m, 'the image copies the same script')
    t.match(dockerfile, /bash \/src\/build-ffmpeg\.sh --build-packages \| xargs apt-get install/, 'installs the packages it names')
    t.match(dockerfile, /&& bash \/src\/build-ffmpeg\.sh \/opt\/ffmpeg$/m, 'and runs it')
    t.match(dockerfile, /^ARG FFMPEG_BUILD=ffmpeg-build$/m, 'its stage is the default; scripts/build-images.sh swaps in the folder provision.sh built')
    t.match(dockerfile, /^FROM \$\{FFMPEG_BUILD\} AS ffmpeg$/m)
    t.match(dockerfile, /^COPY --from=ffmpeg \/bin\/ffmpeg \/bin\/ffprobe \/usr\/local\/bin\/$/m)
    t.match(dockerfile, /\$\(cat \/usr\/local\/share\/ffkube\/ffmpeg-runtime-packages\)/, 'the shared libraries and the font the build needs are installed')
    t.match(dockerfile, /FFMPEG_PATH=\/usr\/local\/bin\/ffmpeg/)
    t.match(dockerfile, /FFPROBE_PATH=\/usr\/local\/bin\/ffprobe/)
    for (const run of parseDockerfile(dockerfile).filter((i) => i.keyword === 'RUN')) {
      t.notMatch(run.args, /apt-get install[^&|;]*\sffmpeg(\s|$)/, `line ${run.line}: Debian's ffmpeg is not installed`)
    }
  })
}

t.test('service image: every entrypoint the chart runs is compiled into it', async (t) => {
  const dockerfile = await readFile('Dockerfile', 'utf8')
  const values = loadYaml<Record<string, { command?: string[] }>>(await readFile('charts/ffkube/values.yaml', 'utf8'))
  for (const component of ['api', 'worker', 'webhookDeliverer', 'operator']) {
    const script = values[component]!.command![1]!
    const top = script.split('/')[1]!
    t.match(dockerfile, new RegExp(`^COPY --from=build /src/dist/${top} \\./dist/${top}$`, 'm'), `${component}: dist/${top} is in the image`)
    const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts')
    t.ok(existsSync(source), `${component}: ${source} exists`)
  }
  t.match(dockerfile, /^WORKDIR \/app$/m, 'dist/… commands and `kubectl exec … node dist/api/admin/cli.js` resolve from /app')
  t.ok(existsSync('api/admin/cli.ts'), 'the admin CLI NOTES.txt runs exists')
})

t.test('.dockerignore lets in what the Dockerfiles copy, and nothing else', async (t) => {
  const ignore = (await readFile('.dockerignore', 'utf8')).split('\n').filter((l) => l && !l.startsWith('#'))
  t.equal(ignore[0], '**', 'everything excluded first')
  for (const path of DOCKERFILES) {
    for (const ins of parseDockerfile(await readFile(path, 'utf8')).filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))) {
      for (const source of ins.args.split(/\s+/).slice(0, -1)) {
        t.ok(ignore.some((rule) => rule === `!${source}` || rule === `!${source}/**`), `${path} line ${ins.line}: ${source} is in the build context`)
      }
    }
  }
})
