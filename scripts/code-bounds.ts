// Checks issue 32's size bounds on the product's code: no file over 300 lines
// and no function over 80 lines under api/ and operator/ (or the folders
// given). Functions are found in the TypeScript syntax tree, so every kind
// counts: declarations, methods, accessors, constructors, arrows and function
// expressions, each from its first line to its last. Prints every file and
// function over its bound and the totals; exits 1 when there is any.
//
//   npx --no-install tsc -p tsconfig.json && node dist/scripts/code-bounds.js [folder…]
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const MAX_FILE_LINES = 300
const MAX_FUNCTION_LINES = 80

// Run from dist/scripts/: the checkout is two levels up.
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const folders = process.argv.length > 2 ? process.argv.slice(2) : ['api', 'operator']

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** A function's name as a reader finds it: its own, its variable's or its property's, else `(anonymous)`. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText()
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) return parent.name.getText()
  return '(anonymous)'
}

const over: string[] = []
let files = 0
let functions = 0
for (const folder of folders) {
  for (const path of sourceFiles(join(root, folder))) {
    const text = readFileSync(path, 'utf8')
    const file = relative(root, path)
    files += 1
    // Lines as `wc -l` counts them: newline characters.
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
    if (lines > MAX_FILE_LINES) over.push(`${file}: ${lines} lines (file)`)
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true)
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        functions += 1
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
        if (last - first + 1 > MAX_FUNCTION_LINES) over.push(`${file}:${first + 1}: ${last - first + 1} lines (function ${nameOf(node as ts.FunctionLikeDeclaration)})`)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
}
for (const line of over) console.log(line)
console.log(`${folders.join(', ')}: ${files} files, ${functions} functions; over ${MAX_FILE_LINES} lines (file) or ${MAX_FUNCTION_LINES} lines (function): ${over.length}`)
process.exitCode = over.length > 0 ? 1 : 0
