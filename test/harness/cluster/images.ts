import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { toolCacheDir } from '../../../api/local/tools.js'

/** The image archives scripts/provision.sh writes for the test node (provision_node_images). */
export type NodeImage = 'pause' | 'coredns' | 'busybox'

/** The `docker save` archive of a node image, for `ctr images import`. */
export function nodeImageArchive(name: NodeImage): string {
  return join(toolCacheDir(), 'images', `${name}.tar`)
}

/** The name:tag the archive holds (never :latest, so IfNotPresent never pulls). */
export async function nodeImageRef(name: NodeImage): Promise<string> {
  return (await readFile(join(toolCacheDir(), 'images', `${name}.ref`), 'utf8')).trim()
}
