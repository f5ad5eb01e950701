import t from 'tap'
import { REFUSED_SYSCALLS_X86_64, seccompInstructions, seccompProgram } from '../../contracts/seccomp-filter.js'

/** Runs the filter's bytes as the kernel would on one call: the action word it returns. */
function verdict(program: Buffer, arch: number, nr: number): number {
  const data = [nr, arch]
  let accumulator = 0
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = program.readUInt16LE(pc * 8)
    const jt = program.readUInt8(pc * 8 + 2)
    const jf = program.readUInt8(pc * 8 + 3)
    const k = program.readUInt32LE(pc * 8 + 4)
    if (code === 0x20) accumulator = data[k / 4] as number
    else if (code === 0x15) pc += accumulator === k ? jt : jf
    else if (code === 0x35) pc += accumulator >= k ? jt : jf
    else if (code === 0x06) return k
    else throw new Error(`unknown instruction ${code}`)
  }
  throw new Error('the program fell off its end')
}

const X86_64 = 0xc000003e
const I386 = 0x40000003
const ALLOW = 0x7fff0000
const EPERM = 0x00050001
const KILL = 0x80000000
const program = seccompProgram('x64') as Buffer

t.test('every refused x86_64 call gets EPERM', async (t) => {
  for (const [name, nr] of Object.entries(REFUSED_SYSCALLS_X86_64)) t.equal(verdict(program, X86_64, nr), EPERM, name)
})

t.test('what media tools call is allowed', async (t) => {
  const allowed: Array<[string, number]> = [['read', 0], ['write', 1], ['openat', 257], ['mmap', 9], ['clone', 56], ['clone3', 435], ['futex', 202], ['exit_group', 231], ['getpid', 39]]
  for (const [name, nr] of allowed) t.equal(verdict(program, X86_64, nr), ALLOW, name)
})

t.test('a call through another ABI kills the process: 32-bit int 0x80, x32', async (t) => {
  t.equal(verdict(program, I386, 26), KILL, 'i386 ptrace is 26: the numbers differ there')
  t.equal(verdict(program, X86_64, 0x40000000 + 101), KILL, 'x32 ptrace')
})

t.test('no filter off x86_64; the program is its instructions, eight bytes each', async (t) => {
  t.equal(seccompProgram('arm64'), null)
  t.equal(program.length, seccompInstructions(Object.values(REFUSED_SYSCALLS_X86_64)).length * 8)
})
