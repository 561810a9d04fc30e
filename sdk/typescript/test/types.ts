// Type-checked by make test (tsc --noEmit): the declarations describe the API.
import { Hutch, HutchError, Sandbox, type CellResult, type ExecResult, type WatchChange } from '@hutch/sdk'

async function use (): Promise<void> {
  const hutch = new Hutch({ url: 'http://127.0.0.1:3111' })
  const sb: Sandbox = await hutch.create('python', { memory_mb: 512, network: false })
  const res: ExecResult = await sb.exec(['true'], { timeoutMs: 1000 })
  const code: number | null = res.exitCode
  const cell: CellResult = await sb.code.run('1 + 1', { language: 'python' })
  const text: string | undefined = cell.data?.['text/plain']
  for await (const e of sb.execStream(['echo', 'hi'])) {
    const kind: string = e.type
    void kind
  }
  try {
    await sb.files.readText('/x', { user: 'nobody' })
  } catch (e) {
    if (e instanceof HutchError) {
      const s: string = e.code
      void s
    }
  }

  // The environment.
  const env: Record<string, string> = (await sb.env.set({ A: '1' })).effective
  const value: string | undefined = await sb.env.get('A')
  await sb.env.delete('A', 'B')

  // Watching files.
  const watch = sb.files.watch('/work', { recursive: true, user: 'nobody' })
  for await (const e of watch) {
    if (e.type === 'change') {
      const change: WatchChange = e.data
      const path: string = change.path
      void path
      break
    }
  }
  watch.close()

  void [code, text, env, value]
}
void use
