/**
 * Runs a pod's containers the way a kubelet would, for the test node agent:
 * volumes are made first (emptyDir → a fresh directory, secret → the Secret's
 * keys read from the apiserver, written as files), then init containers in
 * order and the regular containers together, each its own runner main() call with THAT
 * container's env only (plus what the image itself provides: PATH and the tool
 * paths) and the argv of its `command`; paths under a container's own volume
 * mounts are mapped to the host directories of those volumes, and nothing
 * else is. It stops at the first init container that exits non-zero.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { CoreV1Api, type KubeConfig, type V1Container, type V1EnvVar, type V1KeyToPath, type V1PodSpec, type V1Volume } from '@kubernetes/client-node'
import { main as runnerMain, type MainIo } from '../../runner-image/runner/main.js'

export interface PodRunnerOptions {
  kubeConfig: KubeConfig
  namespace: string
  /**
   * Host directory under which each pod's volumes are made. Keep it short: the runner listens on a
   * Unix socket in the work volume (`.ffkube/run.sock`), and a socket's path may not exceed 107
   * bytes; in a real pod it is `/work/.ffkube/run.sock`, here `<root>/<pod name>/volumes/work/…`.
   */
  root: string
  /** The runner command of the image: every container's `command` must start with it; the rest is the runner's argv. */
  imageCommand: string[]
  /** What the image provides to every container (PATH, FFMPEG_PATH …); the container's own env wins. */
  imageEnv: Record<string, string>
  /** The runner's main, replaceable by a test that wants to observe it. */
  main?: (io: MainIo) => Promise<number>
}

/** One container's run, as a test may inspect it. */
export interface ContainerRun {
  pod: string
  name: string
  init: boolean
  /** The runner's argv, host paths mapped. */
  argv: string[]
  /** The container's env exactly as the Job gave it (pod paths, not host paths). */
  podEnv: Record<string, string>
  /** The names of the volumes the container mounted. */
  mounts: string[]
  exitCode: number
  /** What it wrote to stdout (its pod log). */
  log: string
}

export class PodRunner {
  readonly runs: ContainerRun[] = []
  private readonly core: CoreV1Api

  constructor(private readonly o: PodRunnerOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api)
  }

  /**
   * Runs the pod's containers: init containers one after another, stopping at
   * the first that fails, then every regular container at once, as the kubelet
   * starts them in one sync. `onStart` is called before each step with what is
   * starting and the runs so far, so pod status can follow.
   */
  async run(podName: string, spec: V1PodSpec, onStart: (running: V1Container[], done: ContainerRun[]) => Promise<void>): Promise<ContainerRun[]> {
    const volumes = new Map<string, string>()
    for (const volume of spec.volumes ?? []) volumes.set(volume.name, await this.makeVolume(podName, volume))
    const done: ContainerRun[] = []
    for (const c of spec.initContainers ?? []) {
      await onStart([c], done)
      const run = await this.runContainer(podName, c, true, volumes)
      done.push(run)
      this.runs.push(run)
      if (run.exitCode !== 0) return done
    }
    await onStart(spec.containers, done)
    await Promise.all(spec.containers.map(async (c) => {
      const run = await this.runContainer(podName, c, false, volumes)
      done.push(run)
      this.runs.push(run)
    }))
    return done
  }

  /** Where a pod's volume is on this host, for a test to look into after the run. */
  volumeDir(podName: string, volumeName: string): string {
    return join(this.o.root, podName, 'volumes', volumeName)
  }

  private async makeVolume(podName: string, volume: V1Volume): Promise<string> {
    const dir = this.volumeDir(podName, volume.name)
    await mkdir(dir, { recursive: true })
    if (volume.emptyDir) return dir
    if (volume.secret) {
      // An optional Secret that does not exist is an empty volume, as the kubelet makes it.
      const data = await this.secretData(volume.secret.secretName!).catch((err: unknown) => {
        if (volume.secret?.optional && (err as { code?: unknown }).code === 404) return null
        throw err
      })
      if (data === null) return dir
      const items: V1KeyToPath[] = volume.secret.items ?? Object.keys(data).map((key) => ({ key, path: key }))
      for (const item of items) {
        const value = data[item.key]
        if (value === undefined) throw new Error(`Secret ${volume.secret.secretName} has no key ${item.key}: the kubelet would not start the pod`)
        await writeFile(join(dir, item.path), value)
        await chmod(join(dir, item.path), item.mode ?? volume.secret.defaultMode ?? 0o644)
      }
      return dir
    }
    throw new Error(`volume ${volume.name}: only emptyDir and secret volumes are supported by the test node`)
  }

  private async secretData(name: string): Promise<Record<string, string>> {
    const secret = await this.core.readNamespacedSecret({ name, namespace: this.o.namespace })
    const decoded = Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')])
    return { ...Object.fromEntries(decoded), ...(secret.stringData ?? {}) }
  }

  private async runContainer(pod: string, c: V1Container, init: boolean, volumes: Map<string, string>): Promise<ContainerRun> {
    const command = [...(c.command ?? []), ...(c.args ?? [])]
    const prefix = this.o.imageCommand
    if (!prefix.every((word, i) => command[i] === word)) throw new Error(`container ${c.name} does not run the runner image's command: ${JSON.stringify(command)}`)
    // Only this container's mounts exist for it; a path under another volume stays unreachable.
    const mounts = (c.volumeMounts ?? []).map((m) => ({ at: m.mountPath, host: volumes.get(m.name)! })).sort((a, b) => b.at.length - a.at.length)
    const hostPath = (value: string): string => {
      const mount = mounts.find((m) => value === m.at || value.startsWith(`${m.at}/`))
      return mount ? mount.host + value.slice(mount.at.length) : value
    }
    const podEnv: Record<string, string> = {}
    for (const variable of c.env ?? []) podEnv[variable.name] = await this.envValue(variable)
    const env = { ...this.o.imageEnv, ...Object.fromEntries(Object.entries(podEnv).map(([name, value]) => [name, hostPath(value)])) }
    const argv = command.slice(prefix.length).map(hostPath)
    let log = ''
    const exitCode = await (this.o.main ?? runnerMain)({
      argv,
      env,
      // A pod has no stdin.
      stdin: Readable.from([]),
      stdout: new Writable({ write: (chunk: Buffer, _enc, next) => { log += chunk.toString('utf8'); next() } }),
    })
    return { pod, name: c.name, init, argv, podEnv, mounts: (c.volumeMounts ?? []).map((m) => m.name), exitCode, log }
  }

  private async envValue(variable: V1EnvVar): Promise<string> {
    if (variable.value !== undefined) return variable.value
    const ref = variable.valueFrom?.secretKeyRef
    if (ref) {
      const value = (await this.secretData(ref.name!))[ref.key]
      if (value === undefined) throw new Error(`env ${variable.name}: Secret ${ref.name} has no key ${ref.key}`)
      return value
    }
    return ''
  }
}
