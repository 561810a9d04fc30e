// Type-checked by make test (tsc --noEmit): the declarations describe the API.
import { Hutch, HutchError, Sandbox, type CellResult, type ExecResult, type GitStatus, type VolumeInfo, type WatchChange } from '@hutch/sdk'

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

  // Egress policies, networks, volumes.
  const vol: VolumeInfo = await hutch.volumes.create('cache', { sizeMb: 64 })
  const web = await hutch.create('python', {
    network: { allow_out: ['pypi.org:443'], deny_out: ['10.0.0.0/8'] },
    volumes: [{ name: vol.name, path: '/cache', read_only: true }]
  })
  const policy = await web.network.update({ deny_out: ['example.com'] })
  const denied: number = policy.egress_denied
  await hutch.networks.create('app')
  const members = (await hutch.networks.connect('app', web)).members ?? []
  await hutch.networks.disconnect('app', web.id)
  const names: string[] = (await hutch.networks.list()).map((n) => n.name)

  // The environment.
  const env: Record<string, string> = (await sb.env.set({ A: '1' })).effective
  const value: string | undefined = await sb.env.get('A')
  await sb.env.delete('A', 'B')

  // Git.
  await sb.git.init('/work/r', { initialBranch: 'main' })
  const st: GitStatus = await sb.git.add('/work/r', ['a.txt'])
  const { commit } = await sb.git.commit('/work/r', 'msg', { authorName: 'A', authorEmail: 'a@example.test', timeoutMs: 10000 })
  await sb.git.clone('https://example.test/r.git', '/work/c', { token: 't', depth: 1 })
  await sb.git.push('/work/r', { remote: 'origin', setUpstream: true, username: 'u', password: 'p', credentialsFor: 'https://example.test/' })
  const subjects: string[] = ((await sb.git.log('/work/r', { maxCount: 5 })).commits ?? []).map((c) => c.subject)

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

  void [code, text, denied, members, names, env, value, st, commit.hash, subjects]
}
void use
