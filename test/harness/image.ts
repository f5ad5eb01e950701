/**
 * The built images as a cluster gets them, without a container engine: the
 * `docker save` archives scripts/build-images.sh writes (listed in
 * dist/images.json), their config read as JSON, their layers unpacked in order
 * into a root filesystem, and processes started in it by runc the way the
 * kubelet's runtime starts a restricted container: a numeric user, a read-only
 * root, no capabilities, no new privileges, a fresh 0777 directory where the
 * pod mounts an emptyDir.
 */
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { promisify } from 'node:util'
import { backgroundLaneDone } from './background-lanes.js'

const run = promisify(execFile)

export interface BuiltImage {
  /** The tag the archive carries, e.g. ghcr.io/ffkube/runner:0.1.0. */
  ref: string
  /** Absolute path of the `docker save`-format archive. */
  archive: string
}

export interface BuiltImages {
  /** scripts/build-images.sh's hash of the build context the images were built from. */
  context: string
  service: BuiltImage
  runner: BuiltImage
}

/** The two images last built in this checkout (dist/images.json, written by scripts/build-images.sh). */
export async function builtImages(root = process.cwd()): Promise<BuiltImages> {
  await backgroundLaneDone('images')
  const path = join(root, 'dist', 'images.json')
  const text = await readFile(path, 'utf8').catch(() => {
    throw new Error(`${path} is missing: build the images with scripts/build-images.sh (scripts/provision.sh test runs it)`)
  })
  return JSON.parse(text) as BuiltImages
}

/** What scripts/build-images.sh hashes as the build context (its CONTEXT_PATHS). */
const CONTEXT_PATHS = ['Dockerfile', '.dockerignore', 'package.json', 'package-lock.json', 'tsconfig.json', 'contracts', 'api', 'operator', 'runner-image', 'client', 'console', 'scripts/build-console.sh']

/**
 * scripts/build-images.sh's context_hash, recomputed: `find PATHS -type f |
 * LC_ALL=C sort | xargs sha256sum`, then the line `ffmpeg KEY` (the FFmpeg
 * build script's --key), all through sha256sum, first 16 hex digits. Equal to
 * dist/images.json's `context` when the archives are this tree's.
 */
export async function contextHash(root = process.cwd()): Promise<string> {
  const files: string[] = []
  for (const path of CONTEXT_PATHS) {
    const full = join(root, path)
    if ((await stat(full)).isFile()) {
      files.push(path)
      continue
    }
    for (const entry of await readdir(full, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(relative(root, join(entry.parentPath, entry.name)))
    }
  }
  files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
  let listing = ''
  for (const file of files) listing += `${createHash('sha256').update(await readFile(join(root, file))).digest('hex')}  ${file}\n`
  const { stdout: ffmpegKey } = await run('bash', [join(root, 'scripts/ffmpeg/build-ffmpeg.sh'), '--key'])
  listing += `ffmpeg ${ffmpegKey.trim()}\n`
  return createHash('sha256').update(listing).digest('hex').slice(0, 16)
}

/** The fields of an image config (OCI image spec, `config`) the tests look at. */
export interface ImageConfig {
  User?: string
  Env?: string[]
  Entrypoint?: string[] | null
  Cmd?: string[] | null
  WorkingDir?: string
  ExposedPorts?: Record<string, object>
}

export interface ImageArchive {
  repoTags: string[]
  config: ImageConfig
  /** Paths of the layer tars inside the archive, base first. */
  layers: string[]
}

async function archiveMember(archive: string, member: string): Promise<string> {
  const { stdout } = await run('tar', ['-xOf', archive, member], { maxBuffer: 64 * 1024 * 1024 })
  return stdout
}

/** The archive's manifest.json and image config. */
export async function readImageArchive(archive: string): Promise<ImageArchive> {
  const manifest = JSON.parse(await archiveMember(archive, 'manifest.json')) as { Config: string; RepoTags: string[] | null; Layers: string[] }[]
  if (manifest.length !== 1) throw new Error(`${archive}: ${manifest.length} images, expected one`)
  const [image] = manifest as [(typeof manifest)[0]]
  const config = JSON.parse(await archiveMember(archive, image.Config)) as { config?: ImageConfig }
  return { repoTags: image.RepoTags ?? [], config: config.config ?? {}, layers: image.Layers }
}

/**
 * The image's root filesystem in `dir`/rootfs: each layer extracted over the
 * ones before it in one streaming pass, then its whiteouts applied:
 * `.wh.NAME` removes NAME, `.wh..wh..opq` empties its directory of what lower
 * layers put there.
 */
export async function unpackImage(archive: string, dir: string): Promise<string> {
  const { layers } = await readImageArchive(archive)
  const rootfs = join(dir, 'rootfs')
  await mkdir(rootfs, { recursive: true })
  for (const layer of layers) {
    // gzip -dcf: a compressed layer is inflated, an uncompressed one passes as it is.
    const { stdout } = await run('sh', ['-c', 'tar -xOf "$1" "$2" | gzip -dcf | tar -xvf - -C "$3" --numeric-owner', 'sh', archive, layer, rootfs], {
      maxBuffer: 256 * 1024 * 1024,
    })
    const entries = stdout.split('\n').filter(Boolean).map((entry) => entry.replace(/^\.\//, '').replace(/\/$/, ''))
    const inLayer = new Set(entries)
    for (const entry of entries) {
      const name = entry.split('/').at(-1) ?? ''
      if (!name.startsWith('.wh.')) continue
      const parentEntry = dirname(entry)
      const parent = join(rootfs, parentEntry)
      if (name === '.wh..wh..opq') {
        for (const child of await readdir(parent)) {
          if (!inLayer.has(parentEntry === '.' ? child : `${parentEntry}/${child}`)) await rm(join(parent, child), { recursive: true, force: true })
        }
      } else {
        await rm(join(parent, name.slice('.wh.'.length)), { recursive: true, force: true })
      }
      await rm(join(rootfs, entry), { force: true })
    }
  }
  return rootfs
}

export interface RunResult {
  code: number
  stdout: string
  stderr: string
}

/** A runc bundle's config.json, as far as the harness edits it. */
export interface RuncSpec {
  process: Record<string, unknown>
  root: { path: string; readonly: boolean }
  mounts: { destination: string; type: string; source: string; options: string[] }[]
  linux: { namespaces: { type: string }[]; cgroupsPath?: string }
}

/**
 * Makes `bundle` and `runc spec`'s default config in it, set to run `argv`
 * in `rootfs` as a restricted pod's container runs: the image's numeric
 * user, read-only root, no capabilities, no new privileges. The caller adds
 * its mounts and writes the spec back to `config.json`.
 */
export async function restrictedRuncSpec(bundle: string, rootfs: string, config: ImageConfig, argv: string[], process: { env: string[]; cwd: string }): Promise<RuncSpec> {
  const [uid, gid] = (config.User ?? '0:0').split(':').map(Number)
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error(`image user ${config.User} is not numeric uid:gid`)
  await mkdir(bundle, { recursive: true })
  await run('runc', ['spec', '--bundle', bundle])
  const spec = JSON.parse(await readFile(join(bundle, 'config.json'), 'utf8')) as RuncSpec
  Object.assign(spec.process, {
    terminal: false,
    args: argv,
    user: { uid, gid },
    env: process.env,
    cwd: process.cwd,
    capabilities: { bounding: [], effective: [], permitted: [], ambient: [] },
    noNewPrivileges: true,
  })
  spec.root = { path: rootfs, readonly: true }
  return spec
}

/**
 * Runs `argv` in `rootfs` under runc as the image's user, in its working dir
 * and environment, as a restricted pod would: read-only root, no capabilities,
 * no new privileges, a fresh directory at each of `writable` (the pod's
 * emptyDirs), no network but loopback.
 */
export async function runInImage(dir: string, rootfs: string, config: ImageConfig, argv: string[], writable: string[] = []): Promise<RunResult> {
  const id = `ffkube-image-test-${randomBytes(4).toString('hex')}`
  const bundle = join(dir, id)
  const state = join(dir, 'runc-state')
  const spec = await restrictedRuncSpec(bundle, rootfs, config, argv, { env: config.Env ?? [], cwd: config.WorkingDir || '/' })
  // Each writable path is a fresh directory, mode 0777, bind-mounted: what the kubelet makes of an emptyDir.
  for (const [index, path] of writable.entries()) {
    const source = join(bundle, `volume-${index}`)
    await mkdir(source)
    await chmod(source, 0o777)
    spec.mounts.push({ destination: path, type: 'bind', source, options: ['rbind', 'rw', 'nosuid', 'nodev'] })
  }
  await writeFile(join(bundle, 'config.json'), JSON.stringify(spec))
  try {
    const { stdout, stderr } = await run('runc', ['--root', state, 'run', '--bundle', bundle, id], { maxBuffer: 16 * 1024 * 1024 })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string }
    if (typeof e.code !== 'number') throw err
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  } finally {
    await run('runc', ['--root', state, 'delete', '--force', id]).catch(() => undefined)
    await rm(bundle, { recursive: true, force: true })
  }
}
