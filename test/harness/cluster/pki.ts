import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { run } from './run.js'

/** A key pair and certificate signed by the cluster CA, as files. */
export interface CertFiles {
  certFile: string
  keyFile: string
}

/** The cluster CA and the certificates signed by it, in one folder. */
export interface ClusterPki {
  caFile: string
  caKeyFile: string
  /** kube-apiserver's serving certificate, valid for the given IPs and the in-cluster names. */
  apiserver: CertFiles
  /** kube-apiserver's client certificate towards kubelets (logs, exec): system:masters. */
  apiserverKubeletClient: CertFiles
}

const DAYS = '2'
const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']

async function signed(dir: string, name: string, pki: { caFile: string; caKeyFile: string }, subject: string, extensions: string): Promise<CertFiles> {
  const keyFile = join(dir, `${name}.key`)
  const certFile = join(dir, `${name}.crt`)
  const csr = join(dir, `${name}.csr`)
  const ext = join(dir, `${name}.ext`)
  await run('openssl', ['req', ...KEY, '-keyout', keyFile, '-out', csr, '-subj', subject])
  await writeFile(ext, extensions)
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', pki.caFile, '-CAkey', pki.caKeyFile, '-CAcreateserial', '-days', DAYS, '-out', certFile, '-extfile', ext])
  return { certFile, keyFile }
}

/** A throwaway CA (openssl) and the certificates the control plane needs. */
export async function createPki(dir: string, apiserverIps: string[]): Promise<ClusterPki> {
  const caFile = join(dir, 'ca.crt')
  const caKeyFile = join(dir, 'ca.key')
  await run('openssl', ['req', '-x509', ...KEY, '-keyout', caKeyFile, '-out', caFile, '-days', DAYS, '-subj', '/CN=ffkube-test-ca'])
  const ca = { caFile, caKeyFile }
  const names = ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']
  const san = [...apiserverIps.map((ip) => `IP:${ip}`), ...names.map((n) => `DNS:${n}`)].join(',')
  const apiserver = await signed(dir, 'apiserver', ca, '/CN=kube-apiserver', `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`)
  const apiserverKubeletClient = await signed(dir, 'apiserver-kubelet-client', ca, '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth\n')
  return { caFile, caKeyFile, apiserver, apiserverKubeletClient }
}
