/**
 * The two images as built from our Dockerfiles (scripts/build-images.sh, run by
 * scripts/provision.sh test), checked for real without a cluster: each
 * archive's tag and config against the chart and its Dockerfile's last stage,
 * then its root filesystem run under runc as a restricted pod runs it (user
 * 65532, read-only root, no capabilities, emptyDir-like /work or /tmp and /data).
 */
import t from 'tap'
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadYaml } from '@kubernetes/client-node'
import { builtImages, contextHash, readImageArchive, runInImage, unpackImage, type BuiltImage, type ImageConfig } from '../harness/image.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { parseDockerfile, stages, type Instruction } from './dockerfile.js'

interface Values {
  image: { repository: string }
  runners: { image: { repository: string }; uid: number }
}

/** What the last stage of a Dockerfile says the image's config is. */
function expectedConfig(text: string): { user: string; workdir: string; env: Map<string, string>; entrypoint?: string[]; cmd?: string[]; expose: string[] } {
  const last = stages(parseDockerfile(text)).stages.at(-1)!
  const final = (keyword: string): Instruction | undefined => last.instructions.filter((i) => i.keyword === keyword).at(-1)
  const env = new Map<string, string>()
  for (const ins of last.instructions.filter((i) => i.keyword === 'ENV')) {
    for (const pair of ins.args.split(/\s+/)) {
      const [name, ...value] = pair.split('=')
      env.set(name!, value.join('='))
    }
  }
  const json = (ins: Instruction | undefined): string[] | undefined => (ins ? (JSON.parse(ins.args) as string[]) : undefined)
  return {
    user: final('USER')?.args ?? '',
    workdir: final('WORKDIR')?.args ?? '',
    env,
    entrypoint: json(final('ENTRYPOINT')),
    cmd: json(final('CMD')),
    expose: last.instructions.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/)),
  }
}

function envOf(config: ImageConfig): Map<string, string> {
  return new Map((config.Env ?? []).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]))
}

/** Where the build host keeps the CAs it added itself (this machine's TLS-intercepting egress proxy's among them). */
const HOST_CAS = '/usr/local/share/ca-certificates'

/** The FFmpeg version scripts/ffmpeg/build-ffmpeg.sh pins. */
async function pinnedFfmpeg(): Promise<string> {
  return /^FFMPEG_VERSION=(\S+)$/m.exec(await readFile('scripts/ffmpeg/build-ffmpeg.sh', 'utf8'))![1]!
}

const images = await builtImages()

t.test("the archives in dist/images.json were built from this tree's build context", async (t) => {
  t.equal(images.context, await contextHash(), 'a source edit since the last build would differ: scripts/build-images.sh rebuilds')
})
const values = loadYaml<Values>(await readFile('charts/ffkube/values.yaml', 'utf8'))
const appVersion = loadYaml<{ appVersion: string }>(await readFile('charts/ffkube/Chart.yaml', 'utf8')).appVersion

const IMAGES: { name: string; image: BuiltImage; dockerfile: string; repository: string }[] = [
  { name: 'service', image: images.service, dockerfile: 'Dockerfile', repository: values.image.repository },
  { name: 'runner', image: images.runner, dockerfile: 'runner-image/Dockerfile', repository: values.runners.image.repository },
]

for (const { name, image, dockerfile, repository } of IMAGES) {
  t.test(`the ${name} image carries the chart's tag and the user, workdir, environment and command ${dockerfile} gives it`, async (t) => {
    t.equal(image.ref, `${repository}:${appVersion}`, "the chart's repository at its appVersion, what the chart pulls by default")
    t.ok(existsSync(image.archive), `${image.archive} exists`)
    const { repoTags, config, layers } = await readImageArchive(image.archive)
    t.same(repoTags, [image.ref], 'the archive is tagged with it, so `ctr images import` names it so')
    t.ok(layers.length > 0)
    const expected = expectedConfig(await readFile(dockerfile, 'utf8'))
    t.equal(config.User, expected.user, `USER ${expected.user}`)
    t.equal(config.User, `${values.runners.uid}:${values.runners.uid}`, "the chart's uid")
    t.equal(config.WorkingDir, expected.workdir, `WORKDIR ${expected.workdir}`)
    const env = envOf(config)
    for (const [key, value] of expected.env) t.equal(env.get(key), value, `ENV ${key}=${value}`)
    t.match(env.get('PATH'), /(^|:)\/usr\/local\/bin(:|$)/, "PATH from the base image reaches node in /usr/local/bin")
    for (const name of ['NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'SSL_CERT_FILE']) {
      t.notOk(env.has(name), `no ${name}: the build host's CA (scripts/images/runc-with-host-ca.sh) stays out of the image`)
    }
    if (expected.entrypoint) {
      t.same(config.Entrypoint, expected.entrypoint, 'ENTRYPOINT')
      t.notOk(config.Cmd?.length, 'no CMD after it: the operator appends only --phase …')
    }
    if (expected.cmd) t.same(config.Cmd, expected.cmd, 'CMD')
    for (const port of expected.expose) t.ok(config.ExposedPorts?.[port.includes('/') ? port : `${port}/tcp`], `EXPOSE ${port}`)
  })
}

/** The image unpacked for a test that runs it, removed when the test ends. */
async function unpacked(t: Teardown, image: BuiltImage): Promise<{ dir: string; rootfs: string; config: ImageConfig }> {
  const dir = await scratchDir(t, 'ffkube-image-')
  const rootfs = await unpackImage(image.archive, dir)
  return { dir, rootfs, config: (await readImageArchive(image.archive)).config }
}

t.test('the runner image runs node, ffmpeg, ffprobe and yt-dlp as 65532 on a read-only root', async (t) => {
  const { dir, rootfs, config } = await unpacked(t, images.runner)
  const inRunner = (argv: string[]) => runInImage(dir, rootfs, config, argv, ['/work'])

  const node = await inRunner([
    'node',
    '--input-type=module',
    '-e',
    `import { writeFileSync } from 'node:fs'
     let rootWritable = true
     try { writeFileSync('/app/probe', 'x') } catch { rootWritable = false }
     writeFileSync('/work/probe', 'x')
     await import('/app/dist/runner-image/runner/main.js')
     console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), node: process.version, rootWritable }))`,
  ])
  t.equal(node.code, 0, node.stderr)
  const facts = JSON.parse(node.stdout) as { uid: number; gid: number; node: string; rootWritable: boolean }
  const nodeImage = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-/m.exec(await readFile('runner-image/Dockerfile', 'utf8'))![1]
  t.same(facts, { uid: 65532, gid: 65532, node: `v${nodeImage}`, rootWritable: false }, 'user 65532, the Node of NODE_IMAGE, the root read-only, the runner and its modules load')

  // ffmpeg encodes with libx264 into the work volume, ffprobe reads the result.
  const encode = await inRunner([
    'sh',
    '-c',
    'ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc=duration=1:size=160x120:rate=10 -c:v libx264 -pix_fmt yuv420p /work/out.mp4 ' +
      '&& ffprobe -v error -show_entries stream=codec_name,width -of csv=p=0 /work/out.mp4',
  ])
  t.equal(encode.code, 0, encode.stderr)
  t.equal(encode.stdout.trim(), 'h264,160', 'an H.264 file, probed')

  const ytdlp = await inRunner(['yt-dlp', '--version'])
  t.equal(ytdlp.code, 0, ytdlp.stderr)
  const pinned = /^ARG YTDLP_VERSION=(\S+)$/m.exec(await readFile('runner-image/Dockerfile', 'utf8'))![1]
  t.equal(ytdlp.stdout.trim(), pinned, `yt-dlp ${pinned}, from its byte-compiled copy on the read-only root`)

  // ffkube's build (scripts/ffmpeg/build-ffmpeg.sh), and drawtext finds its font without a fontfile.
  const version = await inRunner([envOf(config).get('FFMPEG_PATH')!, '-hide_banner', '-version'])
  t.match(version.stdout, new RegExp(`^ffmpeg version ${(await pinnedFfmpeg()).replace(/\./g, '\\.')} `), 'the pinned FFmpeg')
  const text = await inRunner(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=160x90:d=0.1', '-frames:v', '1', '-vf', 'drawtext=text=ffkube:fontcolor=white', '/work/text.png'])
  t.equal(text.code, 0, `drawtext draws with the image's font: ${text.stderr}`)
  t.same(await readdir(join(rootfs, 'mnt')), [], '/mnt, where the build mounted the host CA bundle, is empty')
  const bundle = await readFile(join(rootfs, 'etc/ssl/certs/ca-certificates.crt'), 'utf8')
  for (const file of await readdir(HOST_CAS).catch(() => [])) {
    const pem = (await readFile(join(HOST_CAS, file), 'utf8')).trim()
    t.notOk(bundle.includes(pem.split('\n').slice(1, -1).join('\n')), `the build host's own CA ${file} is not in the image's bundle`)
  }
  for (const gone of ['usr/local/bin/npm', 'usr/local/lib/node_modules/npm', 'usr/bin/gcc', 'usr/bin/pip3']) {
    t.notOk(existsSync(join(rootfs, gone)), `no /${gone} in the runtime image`)
  }
})

t.test('the service image loads the API and the admin CLI as 65532 on a read-only root and has ffprobe', async (t) => {
  const { dir, rootfs, config } = await unpacked(t, images.service)
  const inService = (argv: string[]) => runInImage(dir, rootfs, config, argv, ['/tmp', '/data'])

  const api = await inService([
    'node',
    '--input-type=module',
    '-e',
    `await import('/app/dist/api/main.js'); await import('/app/dist/operator/config.js')
     console.log(JSON.stringify({ uid: process.getuid(), cwd: process.cwd() }))`,
  ])
  t.equal(api.code, 0, api.stderr)
  t.same(JSON.parse(api.stdout), { uid: 65532, cwd: '/app' }, "the API's and the operator's modules resolve from /app")

  const cli = await inService(['node', 'dist/api/admin/cli.js'])
  t.equal(cli.code, 2, 'the admin CLI starts and asks for a command (exit 2: bad command line)')
  t.match(cli.stderr, /no command given/)

  const ffprobe = await inService([envOf(config).get('FFPROBE_PATH')!, '-version'])
  t.equal(ffprobe.code, 0, ffprobe.stderr)
  t.match(ffprobe.stdout, new RegExp(`^ffprobe version ${(await pinnedFfmpeg()).replace(/\./g, '\\.')} `), 'the pinned FFmpeg')
  for (const gone of ['usr/local/bin/npm', 'usr/local/lib/node_modules/npm']) t.notOk(existsSync(join(rootfs, gone)), `no /${gone}`)
  t.notOk(existsSync(join(rootfs, 'app/dist/runner-image')), 'no runner modules: the service image runs no commands itself')
})
