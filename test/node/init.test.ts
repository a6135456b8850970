import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { initCommand } from '../../src/tools/init/init-command'
import { INSTALLED_SIM_CONFIG, STARTER_FILES, STARTER_SCRIPTS } from '../support/starter'

const STARTER = new URL('../../examples/consumer/', import.meta.url)

let dir: string
let out: string
let err: string
const io = () => ({
  cwd: dir,
  stdout: (text: string) => {
    out += text
  },
  stderr: (text: string) => {
    err += text
  },
})

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'guard-init-'))
  out = ''
  err = ''
})
afterEach(() => rm(dir, { recursive: true, force: true }))

const read = (path: string) => readFile(join(dir, path), 'utf8')
const manifest = async () => JSON.parse(await read('package.json')) as Record<string, unknown>

describe('workers-ai-guard init', () => {
  it('should write the consumer starter exactly, a .gitignore and the npm scripts', async () => {
    await writeFile(join(dir, 'package.json'), '{ "name": "mine", "version": "1.0.0" }')
    expect(await initCommand([], io(), STARTER)).toBe(0)
    for (const file of STARTER_FILES) {
      expect(await read(file)).toBe(await readFile(new URL(file, STARTER), 'utf8'))
    }
    expect(await read('.gitignore')).toContain('.wrangler/')
    const pkg = await manifest()
    expect(pkg.name).toBe('mine')
    expect(pkg.version).toBe('1.0.0')
    expect(pkg.scripts).toEqual(STARTER_SCRIPTS)
    // The dev script binds the simulator the package ships, at the path npm installs it to.
    expect(STARTER_SCRIPTS.dev).toContain(`-c ${INSTALLED_SIM_CONFIG}`)
    expect(out).toContain('npm run dev')
    expect(err).toBe('')
  })

  it('should create a package.json named after the folder when there is none', async () => {
    expect(await initCommand(['--dir', 'my-worker'], io(), STARTER)).toBe(0)
    const pkg = JSON.parse(await readFile(join(dir, 'my-worker', 'package.json'), 'utf8'))
    expect(pkg).toMatchObject({ name: 'my-worker', private: true, scripts: STARTER_SCRIPTS })
    expect(await readFile(join(dir, 'my-worker', 'src/auth.ts'), 'utf8')).toContain('verifiedUser')
  })

  it('should refuse to replace a starter file, writing nothing, unless --force', async () => {
    await writeFile(join(dir, 'wrangler.toml'), 'name = "mine"\n')
    await writeFile(join(dir, 'package.json'), '{"name":"mine"}')
    expect(await initCommand([], io(), STARTER)).toBe(1)
    expect(err).toContain('already has wrangler.toml; nothing was written')
    expect(await read('wrangler.toml')).toBe('name = "mine"\n')
    expect(await read('package.json')).toBe('{"name":"mine"}')
    await expect(read('src/index.ts')).rejects.toThrow(/ENOENT/)

    expect(await initCommand(['--force'], io(), STARTER)).toBe(0)
    expect(await read('wrangler.toml')).toContain('[ai]')
  })

  it("should keep the user's own scripts and .gitignore", async () => {
    const scripts = { dev: 'vite', deploy: STARTER_SCRIPTS.deploy, test: 'vitest' }
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'mine', scripts }))
    await writeFile(join(dir, '.gitignore'), 'dist/\n')
    expect(await initCommand([], io(), STARTER)).toBe(0)
    const pkg = await manifest()
    expect(pkg.scripts).toEqual({ ...STARTER_SCRIPTS, dev: 'vite', test: 'vitest' })
    expect(out).toContain('Kept your own scripts dev')
    expect(await read('.gitignore')).toBe('dist/\n')
  })

  it('should refuse a package.json it cannot read as an object, and leave it alone', async () => {
    for (const text of ['{ "name": ', '[1, 2]', '{"scripts": "build"}']) {
      await writeFile(join(dir, 'package.json'), text)
      err = ''
      expect(await initCommand([], io(), STARTER)).toBe(1)
      expect(err).toMatch(/package\.json .*fix it and run init again/)
      expect(await read('package.json')).toBe(text)
      await expect(read('wrangler.toml')).rejects.toThrow(/ENOENT/)
    }
  })

  it('should answer bad arguments with the usage and exit code 2', async () => {
    expect(await initCommand(['--dir'], io(), STARTER)).toBe(2)
    expect(err).toMatch(/--dir.*argument missing/)
    err = ''
    expect(await initCommand(['--overwrite'], io(), STARTER)).toBe(2)
    expect(err).toContain("Unknown option '--overwrite'")
    err = ''
    expect(await initCommand(['my-worker'], io(), STARTER)).toBe(2)
    expect(err).toContain("Unexpected argument 'my-worker'")
    expect(await initCommand(['--help'], io(), STARTER)).toBe(0)
    expect(out).toContain('Usage: workers-ai-guard init')
  })
})
