import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from '../../../api/local/child-server.js'
import { toolCacheDir, toolPath } from '../../../api/local/tools.js'
import { processesMentioning } from '../processes.js'
import type { Teardown } from '../scratch.js'
import { unmountAll } from './mounts.js'
import { run } from './run.js'

/** A containerd serving the CRI for the test node. */
export interface Containerd {
  socket: string
  /** `ctr -n k8s.io images import`: the kubelet's namespace. */
  importImage(archivePath: string): Promise<void>
  /**
   * Stops containerd (SIGTERM) and starts it again on the same config and
   * state, as a node's runtime restart or upgrade does: running containers
   * stay with their shims, and the kubelet reconnects to the socket.
   */
  restart(): Promise<void>
}

/** containerd 2.x config (version 4): everything under `dir`, settings this host needs (shared/notes/real-node.md). */
function containerdConfig(dir: string, socket: string, sandboxImage: string, cniConfDir: string): string {
  return `version = 4
root = '${dir}/root'
state = '${dir}/state'
# NRI would listen on /var/run/nri; nothing here uses it.
disabled_plugins = ['io.containerd.nri.v1.nri']

[plugins.'io.containerd.server.v1.grpc']
  address = '${socket}'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '${socket}.ttrpc'
[plugins.'io.containerd.internal.v1.opt']
  path = '${dir}/opt'
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '${sandboxImage}'
[plugins.'io.containerd.cri.v1.runtime']
  # Root lacks CAP_SYS_RESOURCE here: without this every sandbox fails.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['/usr/lib/cni']
  conf_dir = '${cniConfDir}'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = '/usr/sbin/runc'
  Root = '${dir}/runc'
`
}

async function ctr(socket: string, args: string[]): Promise<string> {
  return run(toolPath('ctr'), ['--address', socket, '-n', 'k8s.io', ...args])
}

/** Kills every container of this containerd (runc), then its shims: containers outlive a stopped containerd. */
export async function killContainers(dir: string, socket: string): Promise<void> {
  const runcRoot = join(dir, 'runc', 'k8s.io')
  const ids = (await run('/usr/sbin/runc', ['--root', runcRoot, 'list', '-q'], { allowFailure: true })).split('\n').filter(Boolean)
  for (const id of ids) await run('/usr/sbin/runc', ['--root', runcRoot, 'delete', '--force', id], { allowFailure: true })
  for (const pid of await processesMentioning(socket)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
}

/**
 * Starts containerd with root, state, socket and runc root under `dir`;
 * teardown kills its containers and shims and unmounts what they left.
 */
export async function startContainerd(t: Teardown, dir: string, opts: { sandboxImage: string; cniConfDir: string }): Promise<Containerd> {
  await mkdir(dir, { recursive: true })
  const socket = join(dir, 'containerd.sock')
  const configFile = join(dir, 'config.toml')
  await writeFile(configFile, containerdConfig(dir, socket, opts.sandboxImage, opts.cniConfDir))
  // The shim binary is found on PATH.
  const env = { ...process.env, PATH: `${join(toolCacheDir(), 'bin')}:${process.env.PATH ?? ''}` }
  const start = async () => {
    const started = ChildServer.start({ name: 'containerd', command: toolPath('containerd'), args: ['--config', configFile, '--log-level', 'warn'], env })
    await started.waitUntilReady(async () => ((await ctr(socket, ['version'])) ? true : undefined), 60_000)
    return started
  }
  let server: ChildServer | undefined
  t.teardown(async () => {
    await killContainers(dir, socket)
    await server?.stop()
    await unmountAll(dir)
  })
  server = await start()
  return {
    socket,
    importImage: async (archivePath) => {
      await ctr(socket, ['images', 'import', archivePath])
    },
    restart: async () => {
      await server?.stop()
      server = undefined
      server = await start()
    },
  }
}
