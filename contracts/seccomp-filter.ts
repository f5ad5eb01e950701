/**
 * The jail's seccomp filter (bwrap --seccomp FD): a classic BPF program that
 * refuses, with EPERM, the system calls no media tool needs and kernel
 * exploits favour (debugging other processes, kernel keyrings, eBPF, perf,
 * userfaultfd, io_uring, mounts and namespaces, modules, kexec), and kills a
 * process that calls in through another ABI (32-bit `int 0x80`, x32), where
 * the numbers differ. Built for x86_64 only; on another architecture the jail
 * goes without it (README, "The sandbox"). Pure: bytes in, tests compare them.
 */

/** x86_64 numbers of the refused calls (arch/x86/entry/syscalls/syscall_64.tbl). */
export const REFUSED_SYSCALLS_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  vhangup: 153,
  pivot_root: 155,
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  lookup_dcookie: 212,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
}

const AUDIT_ARCH_X86_64 = 0xc000003e
const X32_SYSCALL_BIT = 0x40000000
const EPERM = 1
const SECCOMP_RET_KILL_PROCESS = 0x80000000
const SECCOMP_RET_ERRNO = 0x00050000
const SECCOMP_RET_ALLOW = 0x7fff0000
// struct seccomp_data: nr at offset 0, arch at 4.
const OFFSET_NR = 0
const OFFSET_ARCH = 4
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const RET_K = 0x06

type Instruction = [code: number, jt: number, jf: number, k: number]

/** The filter's instructions: arch check, ABI check, one comparison per refused call, allow. */
export function seccompInstructions(refused: readonly number[]): Instruction[] {
  const program: Instruction[] = [
    [LD_W_ABS, 0, 0, OFFSET_ARCH],
    [JEQ_K, 1, 0, AUDIT_ARCH_X86_64],
    [RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, OFFSET_NR],
    [JGE_K, 0, 1, X32_SYSCALL_BIT],
    [RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS],
  ]
  // Each comparison jumps, on a match, over the ones after it and the allow, to the refusal at the end.
  refused.forEach((nr, i) => program.push([JEQ_K, refused.length - i, 0, nr]))
  program.push([RET_K, 0, 0, SECCOMP_RET_ALLOW])
  program.push([RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM])
  return program
}

/** The filter as bwrap reads it: struct sock_filter[] in the host's (little-endian) byte order; null off x86_64. */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  if (arch !== 'x64') return null
  const program = seccompInstructions(Object.values(REFUSED_SYSCALLS_X86_64))
  const bytes = Buffer.alloc(program.length * 8)
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8)
    bytes.writeUInt8(jt, i * 8 + 2)
    bytes.writeUInt8(jf, i * 8 + 3)
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return bytes
}
