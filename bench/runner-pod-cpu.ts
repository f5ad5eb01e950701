/**
 * The CPU one remux costs inside a runner pod, per container, for runner
 * images side by side (issue 29 item 2; docs/benchmarks/throughput.md, "The
 * runner bundled"). Off the cluster, so it needs no host lock, but the
 * images themselves: each `docker save` archive unpacked, and each command
 * run as its Job's pod runs it (operator/job-builder.ts): two runc
 * containers of the image started together on one shared work directory,
 * the image's entrypoint with `--phase fetch-run` and `--phase upload`, the
 * spec in FFKUBE_COMMAND_SPEC, a read-only root (so the image's own V8
 * compile cache is read, never written), no capabilities, the credentials
 * mounted in the upload container only, status over NATS. The containers
 * share the host's network (the pod's NATS, S3 and input server here are
 * loopback servers); nothing else of the cluster is involved.
 *
 * CPU is the containers' cgroup (v1 cpuacct): every process in it, Node,
 * ffmpeg and ffprobe, not runc. The images alternate command by command, so
 * the load of the host falls on all of them alike; `uptime`'s load is
 * printed with the figures. Root, runc and cgroup v1, as the cluster lane.
 *
 *   BENCH_RUNNER_IMAGES=before=<runner archive>,after=<runner archive> BENCH_RUNS=20 \
 *     npm run -s bench -- runner-pod-cpu
 *
 * Without BENCH_RUNNER_IMAGES: dist/images.json's runner alone. With
 * BENCH_CPU_PROF=<dir>, each container's Node also writes a V8 CPU profile
 * (`--cpu-prof`), kept as <dir>/<image>-<round>/{run,upload}/; the profiler's
 * own cost is then in the CPU figures.
 */
import { execFile, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { chmod, mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { connect, JSONCodec } from 'nats'
import { STATUS_SUBJECT_PREFIX, type StatusEvent } from '../contracts/status-events.js'
import { builtImages, readImageArchive, restrictedRuncSpec, unpackImage, type ImageConfig } from '../test/harness/image.js'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { createServiceStreams, startNats } from '../test/harness/nats.js'
import { startS3 } from '../test/harness/s3.js'
import { scratchDir } from '../test/harness/scratch.js'
import { specOf } from '../test/runner/harness.js'
import { benchRun } from './bench-run.js'
import { percentile } from './table.js'

const run = promisify(execFile)
const { t, run: runBench } = benchRun()
const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const CGROUP_ROOT = '/sys/fs/cgroup/cpuacct'
const CONTAINERS = ['ffmpeg', 'upload'] as const
type ContainerName = (typeof CONTAINERS)[number]

interface Image {
  label: string
  rootfs: string
  config: ImageConfig
}

/** `label=archive,…`, or dist/images.json's runner as `this tree`. */
async function imagesToCompare(): Promise<Array<{ label: string; archive: string }>> {
  const given = process.env.BENCH_RUNNER_IMAGES
  if (!given) return [{ label: 'this tree', archive: (await builtImages()).runner.archive }]
  return given.split(',').map((pair) => {
    const at = pair.indexOf('=')
    if (at <= 0) throw new Error(`BENCH_RUNNER_IMAGES: "${pair}" is not label=archive`)
    return { label: pair.slice(0, at), archive: pair.slice(at + 1) }
  })
}

/** A container of `image`, as the kubelet would make it; its processes are charged to the cgroup `group`. */
interface ContainerRun {
  image: Image
  id: string
  argv: string[]
  env: string[]
  /** destination → host directory, each mounted read-write unless listed in `readOnly`. */
  mounts: Record<string, string>
  readOnly?: string[]
  group: string
}

async function runContainer(dir: string, c: ContainerRun): Promise<{ code: number; stderr: string }> {
  const bundle = join(dir, c.id)
  const spec = await restrictedRuncSpec(bundle, c.image.rootfs, c.image.config, c.argv, { env: [...(c.image.config.Env ?? []), ...c.env], cwd: '/work' })
  for (const [destination, source] of Object.entries(c.mounts)) {
    spec.mounts.push({ destination, type: 'bind', source, options: ['rbind', c.readOnly?.includes(destination) ? 'ro' : 'rw', 'nosuid', 'nodev'] })
  }
  // The host's network: the servers the pod talks to listen on loopback here.
  spec.linux.namespaces = spec.linux.namespaces.filter((ns) => ns.type !== 'network')
  spec.linux.cgroupsPath = `/${c.group}/${c.id}`
  await writeFile(join(bundle, 'config.json'), JSON.stringify(spec))
  const child = spawn('runc', ['--root', join(dir, 'runc-state'), 'run', '--bundle', bundle, c.id], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const code = await new Promise<number>((resolve) => child.once('exit', (exitCode) => resolve(exitCode ?? 255)))
  await run('runc', ['--root', join(dir, 'runc-state'), 'delete', '--force', c.id]).catch(() => undefined)
  await rm(bundle, { recursive: true, force: true })
  return { code, stderr }
}

/** CPU ms charged so far to a cgroup and everything that ran under it (0 before anything did). */
async function cgroupCpuMs(group: string): Promise<number> {
  const text = await readFile(join(CGROUP_ROOT, group, 'cpuacct.usage'), 'utf8').catch(() => '0')
  return Number(text) / 1e6
}

/** runc removes each container's cgroup; this removes the groups above them, in every controller's hierarchy runc made them. */
async function removeCgroups(group: string): Promise<void> {
  for (const controller of await readdir('/sys/fs/cgroup')) {
    const top = join('/sys/fs/cgroup', controller, group)
    for (const sub of await readdir(top, { withFileTypes: true }).catch(() => [])) if (sub.isDirectory()) await rmdir(join(top, sub.name)).catch(() => undefined)
    await rmdir(top).catch(() => undefined)
  }
}

/** A world-writable empty directory: what the kubelet makes of an emptyDir. */
async function emptyDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true })
  await chmod(path, 0o777)
  return path
}

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-bench-pod-cpu-')
  const group = `ffkube-bench-pod-cpu-${randomBytes(3).toString('hex')}`
  t.teardown(() => removeCgroups(group))
  const [nats, s3, clip] = await Promise.all([startNats(t), startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const secrets = await emptyDir(join(dir, 'storage-secret'))
  await writeFile(join(secrets, 'credentials.json'), JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  await chmod(join(secrets, 'credentials.json'), 0o444)

  const images: Image[] = []
  for (const { label, archive } of await imagesToCompare()) {
    const rootfs = await unpackImage(archive, await emptyDir(join(dir, `image-${images.length}`)))
    images.push({ label, rootfs, config: (await readImageArchive(archive)).config })
    console.error(`runner-pod-cpu: ${label} = ${archive}`)
  }

  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  await createServiceStreams(t, nats)
  const codec = JSONCodec<StatusEvent>()
  const terminal = new Map<string, StatusEvent>()
  nc.subscribe(`${STATUS_SUBJECT_PREFIX}.>`, {
    callback: (_err, msg) => {
      const event = codec.decode(msg.data)
      if (event.type !== 'PROCESSING') terminal.set(event.command_id, event)
    },
  })

  const cpu = new Map<string, Record<ContainerName | 'node -e 0', number[]>>(images.map((image) => [image.label, { ffmpeg: [], upload: [], 'node -e 0': [] }]))
  const loads: number[] = []
  for (let i = 0; i < RUNS; i++) {
    // Alternated: a different image first in each round.
    const order = images.map((_, k) => images[(i + k) % images.length]!)
    for (const image of order) {
      loads.push(loadavg()[0]!)
      const commandId = randomUUID()
      const spec = specOf({
        commandId,
        accountId: 'acc_bench',
        inputFiles: { in_video: media.url(clip) },
        outputFiles: { out_video: 'remux.mkv' },
        ffmpegCommands: ['ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}}'],
      })
      const runDir = join(dir, `run-${i}-${images.indexOf(image)}`)
      const work = await emptyDir(join(runDir, 'work'))
      const scratch = await emptyDir(join(runDir, 'upload-scratch'))
      const entrypoint = image.config.Entrypoint ?? []
      const profiled = (name: string) => process.env.BENCH_CPU_PROF ? [entrypoint[0]!, '--cpu-prof', `--cpu-prof-dir=/work/.prof/${name}`, ...entrypoint.slice(1)] : entrypoint
      // What operator/job-builder.ts gives both containers, then the upload container's own.
      const env = [
        `FFKUBE_COMMAND_ID=${commandId}`, `FFKUBE_COMMAND_SPEC=${JSON.stringify(spec)}`, 'FFKUBE_WORK_DIR=/work', 'FFKUBE_STATUS_REPORTER=nats',
        'TMPDIR=/work/.tmp', 'HOME=/work/.home', `NATS_URL=${nats.url}`, `S3_ENDPOINT=${s3.endpoint}`, `S3_BUCKET=${s3.bucket}`, `S3_REGION=${s3.region}`,
        // The input server is on loopback here, a public address in the cluster.
        'ALLOW_PRIVATE_NETWORKS=true',
      ]
      const uploadEnv = [...env.filter((v) => !/^(TMPDIR|HOME)=/.test(v)), 'TMPDIR=/var/run/ffkube/upload/tmp', 'HOME=/var/run/ffkube/upload/home', 'S3_CREDENTIALS_FILE=/var/run/secrets/ffkube/storage/credentials.json']
      const groups = Object.fromEntries(CONTAINERS.map((name) => [name, `${group}/${image.label.replace(/\W+/g, '-')}-${name}`])) as Record<ContainerName, string>
      const before = Object.fromEntries(await Promise.all(CONTAINERS.map(async (name) => [name, await cgroupCpuMs(groups[name])] as const)))
      const [ran, uploaded] = await Promise.all([
        runContainer(runDir, { image, id: `${commandId.slice(0, 8)}-ffmpeg`, argv: [...profiled('run'), '--phase', 'fetch-run', '--work-dir', '/work'], env, mounts: { '/work': work }, group: groups.ffmpeg }),
        runContainer(runDir, {
          image, id: `${commandId.slice(0, 8)}-upload`, argv: [...profiled('upload'), '--phase', 'upload', '--work-dir', '/work'], env: uploadEnv,
          mounts: { '/work': work, '/var/run/ffkube/upload': scratch, '/var/run/secrets/ffkube/storage': secrets }, readOnly: ['/var/run/secrets/ffkube/storage'], group: groups.upload,
        }),
      ])
      if (ran.code !== 0 || uploaded.code !== 0) throw new Error(`${image.label}: containers exited ${ran.code} and ${uploaded.code}\n${ran.stderr}\n${uploaded.stderr}`)
      await nc.flush()
      const end = terminal.get(commandId)
      if (end?.type !== 'SUCCESS') throw new Error(`${image.label}: command ${commandId} ended ${end?.type ?? 'without a terminal event'}`)
      for (const name of CONTAINERS) cpu.get(image.label)![name].push((await cgroupCpuMs(groups[name])) - before[name]!)
      // Node's own start in the same image, flags and compile cache: the floor under each container.
      const floorGroup = `${group}/${image.label.replace(/\W+/g, '-')}-floor`
      const floor0 = await cgroupCpuMs(floorGroup)
      const floor = await runContainer(runDir, { image, id: `${commandId.slice(0, 8)}-floor`, argv: [...entrypoint.slice(0, -1), '-e', '0'], env: [], mounts: { '/work': work }, group: floorGroup })
      if (floor.code !== 0) throw new Error(`${image.label}: node -e 0 exited ${floor.code}: ${floor.stderr}`)
      cpu.get(image.label)!['node -e 0'].push((await cgroupCpuMs(floorGroup)) - floor0)
      if (process.env.BENCH_CPU_PROF) await run('cp', ['-r', join(work, '.prof'), join(process.env.BENCH_CPU_PROF, `${image.label}-${i}`)])
      await rm(runDir, { recursive: true, force: true })
    }
  }

  const { stdout: uptime } = await run('uptime')
  console.log(`${RUNS} remuxes per image (2 s 320×240 clip, -map 0 -c copy), alternated; CPU ms per command by container (cgroup cpuacct: Node, ffmpeg, ffprobe)`)
  console.log(`load (1 min) at each command's start: median ${percentile([...loads].sort((a, b) => a - b), 50).toFixed(1)}, max ${Math.max(...loads).toFixed(1)}; uptime at the end:${uptime.trimEnd().replace(/^.*load/, ' load')}`)
  const stat = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b)
    return `${percentile(sorted, 50).toFixed(0)} [${sorted[0]!.toFixed(0)}–${sorted.at(-1)!.toFixed(0)}]`
  }
  console.log('| image | ffmpeg container (fetch-run) | upload container | pod (sum of medians) | node -e 0 (same flags) |')
  console.log('|---|---:|---:|---:|---:|')
  for (const image of images) {
    const c = cpu.get(image.label)!
    const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50)
    console.log(`| ${image.label} | ${stat(c.ffmpeg)} | ${stat(c.upload)} | ${(median(c.ffmpeg) + median(c.upload)).toFixed(0)} | ${stat(c['node -e 0'])} |`)
  }
}

await runBench(main)
