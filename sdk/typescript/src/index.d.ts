// Types of @hutch/sdk (src/index.js).

/** The S-code envelope of an error. */
export interface ErrorEnvelope {
  type: string
  code: string
  message: string
  retryable: boolean
  fix?: Record<string, unknown>
  fix_note?: string
  docs_url?: string
}

/** An error the daemon answered, with its S-code. */
export class HutchError extends Error {
  envelope: ErrorEnvelope
  /** The S-code, e.g. "S002". */
  code: string
  retryable: boolean
  fix?: Record<string, unknown>
  fixNote: string
  /** The HTTP status. */
  status: number
}

/** The most bytes Files.download delivers unless its maxBytes says otherwise (1 GiB). */
export const DEFAULT_MAX_DOWNLOAD: number

/** A download past its bound (Files.download's maxBytes). */
export class DownloadTooLargeError extends Error {
  /** The bound in bytes. */
  limit: number
  /** The size the daemon announced; undefined when the stream passed the bound. */
  size?: number
}

/** One event of a stream: stdout, stderr, start, exit, log, ... */
export interface StreamEvent<T = any> {
  type: string
  data: T
}

/** An output chunk of a process or cell. */
export interface OutputChunk {
  data: string
  base64?: boolean
  offset: number
  dropped?: number
}

/** The events of a streaming call; `result` is its final value once iterated.
 *  Leaving a loop over it early, or close(), ends the call. */
export class EventStream<R = any, Ev = StreamEvent> implements AsyncIterable<Ev> {
  result: R | undefined
  [Symbol.asyncIterator] (): AsyncIterator<Ev>
  collect (): Promise<{ events: Ev[], result: R | undefined }>
  /** End the call: the daemon sees its caller go, a loop over it ends. */
  close (): void
  [Symbol.asyncDispose] (): Promise<void>
}

/** What a sandbox may reach outside: entries are IPv4 addresses or CIDRs,
 *  host names or `*.domain`, each with an optional `:port`. With allow_out,
 *  everything else is refused; deny_out wins. */
export interface EgressPolicy {
  allow_out?: string[]
  deny_out?: string[]
  /** Headers written into the sandbox's HTTPS requests to host, {{secret.NAME}} for a secret. */
  transforms?: { host: string, headers: Record<string, string> }[]
}

/** A volume mounted at create. */
export interface VolumeMount {
  name: string
  /** Where the sandbox sees it: absolute. */
  path: string
  read_only?: boolean
}

export interface CreateOptions {
  cpus?: number
  memory_mb?: number
  /** true for outbound networking, or an egress policy (which implies it). */
  network?: boolean | EgressPolicy
  volumes?: VolumeMount[]
  env?: Record<string, string> | string[]
  idle_timeout_secs?: number
  timeout_secs?: number
  metadata?: Record<string, string>
  template?: string
  snapshot_id?: string
  name?: string
  /** Isolation runtime: "gvisor" or "microvm"; the daemon's default_runtime when omitted. */
  runtime?: string
  /** Its ports' preview terms (issue 37). */
  preview?: PreviewOptions
}

/** A sandbox's preview terms: the Host its servers see (`${PORT}` the port reached), and whether its ports may never be public. */
export interface PreviewOptions {
  host_header?: string
  private?: boolean
}

export interface ExecOptions {
  env?: Record<string, string>
  workdir?: string
  timeoutMs?: number
  stdin?: string | Uint8Array
}

export interface ExecResult {
  stdout: string
  stderr: string
  /** null when the timeout killed it. */
  exitCode: number | null
  timedOut: boolean
  durationMs: number
  /** The timeout it ran with: the one asked for, or the daemon's default (over its max_exec_timeout_ms is refused, S001). */
  timeoutMs?: number
}

export interface ExecEnd {
  exit_code: number | null
  timed_out: boolean
  duration_ms: number
  success: boolean
  timeout_ms?: number
}

export interface SandboxInfo {
  sandbox_id: string
  image: string
  stopped: boolean
  state?: string
  [key: string]: unknown
}

export interface CellResult {
  context_id: string
  execution_count: number
  status: 'ok' | 'error'
  /** The last expression's value by MIME type (text/plain, image/png base64, ...). */
  data?: Record<string, any>
  display?: Array<Record<string, any>>
  error?: { name: string, value: string, traceback: string[] }
  exit_code?: number
  timed_out?: boolean
  duration_ms: number
}

/** A connection to a hutch daemon ($HUTCH_URL, $HUTCH_TOKEN by default). */
/** The daemon's local Unix socket as the package installs it. */
export const DEFAULT_SOCKET: string

export class Hutch {
  /** url: the daemon's ($HUTCH_URL; "unix:///path" for its socket); caCert: a PEM file of CAs
   *  to trust ($HUTCH_CA_CERT); clientCert, clientKey: a client certificate ($HUTCH_CLIENT_CERT, $HUTCH_CLIENT_KEY). */
  constructor (options?: { url?: string, token?: string, caCert?: string, clientCert?: string, clientKey?: string })
  url: string
  token: string
  /** The Unix socket the client speaks over, if any. */
  socketPath?: string
  networks: Networks
  secrets: Secrets
  volumes: Volumes
  fetch (method: string, path: string, options?: { body?: unknown, raw?: BodyInit, accept?: string, contentType?: string, signal?: AbortSignal }): Promise<Response>
  request<T = any> (method: string, path: string, body?: unknown): Promise<T>
  stream<R = any> (method: string, path: string, body?: unknown): EventStream<R>
  /** Any function of the table by id. */
  call<T = any> (functionId: string, payload?: Record<string, unknown>): Promise<T>
  create (image?: string, options?: CreateOptions): Promise<Sandbox>
  connect (sandboxId: string): Promise<Sandbox>
  list (): Promise<SandboxInfo[]>
  events (params?: { sandbox_id?: string, type?: string, since?: string, after?: string, limit?: number }): Promise<Array<Record<string, any>>>
  /** The caller's use against its quota (issue 38). */
  quota (): Promise<{ owner: string, items: Array<{ name: string, used: number, limit: number, key: string }> }>
}

/** Symbol.asyncDispose, or the name Node gives it where it has none. */
export const asyncDispose: symbol

/** One sandbox; `await using sb = ...` stops it at the end of the scope. */
export class Sandbox {
  constructor (client: Hutch, id: string, image?: string)
  client: Hutch
  id: string
  image: string
  files: Files
  processes: Processes
  code: Code
  ports: Ports
  env: Env
  network: Network
  git: Git
  static create (image?: string, options?: CreateOptions, client?: Hutch): Promise<Sandbox>
  static connect (id: string, client?: Hutch): Promise<Sandbox>
  static list (client?: Hutch): Promise<SandboxInfo[]>
  path (rest?: string): string
  info (): Promise<SandboxInfo>
  stop (): Promise<void>
  [Symbol.asyncDispose] (): Promise<void>
  exec (argv: string[], options?: ExecOptions): Promise<ExecResult>
  execStream (argv: string[], options?: ExecOptions): EventStream<ExecEnd>
  pause (options?: { hibernate?: boolean }): Promise<Record<string, any>>
  resume (): Promise<Record<string, any>>
  snapshot (): Promise<{ snapshot_id: string, [key: string]: unknown }>
  fork (count?: number): Promise<Sandbox[]>
  metrics (): Promise<Record<string, any>>
  logs (options?: { follow?: boolean, tag?: string }): EventStream
  pty (options?: { cols?: number, rows?: number, cmd?: string, cwd?: string }): Terminal
}

/** A terminal over the PTY WebSocket. */
export class Terminal {
  opened: Promise<unknown>
  /** Resolves with the exit code once the terminal closed. */
  exited: Promise<number | undefined>
  exitCode: number | undefined
  ondata: (bytes: Uint8Array) => void
  write (data: string | Uint8Array): Promise<void>
  resize (cols: number, rows: number): Promise<void>
  close (): void
}

export interface FsEntry {
  name: string
  path: string
  size: number
  mode: string
  mtime: number
  type: string
  [key: string]: unknown
}

/** A file operation's user: a user of the image (a name or uid[:gid])
 *  it runs as for that one call; the image's user by default. */
export interface AsUser {
  user?: string
}

/** One change under a watched directory (a `change` event's data). */
export interface WatchChange {
  type: 'create' | 'write' | 'remove' | 'rename' | 'chmod'
  /** What changed; for a rename, its new path. */
  path: string
  /** A rename's old path, when both ends are inside the watch. */
  old_path?: string
  is_dir?: boolean
}

/** An event of a watch: `open` once it is in place, `change` per change,
 *  `overflow` when changes were lost (look again). */
export type WatchEvent =
  | { type: 'change', data: WatchChange }
  | { type: 'open' | 'overflow', data: Record<string, unknown> | null }

export class Files {
  write (path: string, content: string | Uint8Array, options?: { mode?: string, parents?: boolean } & AsUser): Promise<{ bytes_written: number, path: string }>
  read (path: string, options?: AsUser): Promise<Uint8Array>
  readText (path: string, options?: AsUser): Promise<string>
  list (path: string, options?: AsUser): Promise<FsEntry[]>
  stat (path: string, options?: AsUser): Promise<FsEntry>
  mkdir (path: string, options?: { parents?: boolean } & AsUser): Promise<unknown>
  remove (path: string, options?: { recursive?: boolean } & AsUser): Promise<unknown>
  move (src: string, dst: string, options?: AsUser): Promise<unknown>
  grep (path: string, pattern: string, options?: AsUser): Promise<Array<{ path: string, line_number: number, line: string }>>
  upload (path: string, data: Uint8Array | ReadableStream<Uint8Array>, options?: { mode?: string } & AsUser): Promise<{ bytes_written: number, path: string }>
  /** At most maxBytes (default DEFAULT_MAX_DOWNLOAD; 0: no bound), else DownloadTooLargeError. */
  download (path: string, options?: { maxBytes?: number } & AsUser): Promise<ReadableStream<Uint8Array>>
  /** The changes under a directory: `open` once the watch is in place, then
   *  `change` events (WatchChange), `overflow` when some were lost. */
  watch (path: string, options?: { recursive?: boolean } & AsUser): EventStream<unknown, WatchEvent>
}

export class Processes {
  start (argv: string[], options?: { tag?: string, stdin?: boolean, env?: Record<string, string>, workdir?: string }): Promise<number>
  list (): Promise<Array<Record<string, any>>>
  get (pid: number): Promise<Record<string, any>>
  output (pid: number): Promise<Record<string, any>>
  follow (pid: number): EventStream
  writeStdin (pid: number, data: string | Uint8Array, options?: { close?: boolean }): Promise<unknown>
  signal (pid: number, signal?: string): Promise<unknown>
  kill (pid: number): Promise<unknown>
  wait (pid: number, timeoutMs?: number): Promise<Record<string, any>>
}

export class Ports {
  /** Make a port reachable; resolves to its preview URL. */
  expose (port: number, options?: { public?: boolean, expiresInSecs?: number, cors?: string[] }): Promise<string>
  /** The exposed ports: url is a path of the daemon's listener; host_url, with the daemon's preview_domain, the port's own host. */
  list (): Promise<Array<{ port: number, url: string, host_url?: string, public: boolean, expires_at?: string }>>
  unexpose (port: number): Promise<unknown>
}

export class Code {
  run (code: string, options?: { language?: 'python' | 'javascript' | 'bash', contextId?: string, timeoutMs?: number, onOutput?: (e: StreamEvent<OutputChunk>) => void }): Promise<CellResult>
  createContext (options?: { language?: 'python' | 'javascript' | 'bash', cwd?: string }): Promise<string>
  contexts (): Promise<Array<Record<string, any>>>
  interrupt (contextId: string): Promise<unknown>
  restart (contextId: string): Promise<unknown>
}

/** A sandbox's environment: its own variables and what execs start from. */
export interface EnvInfo {
  sandbox_id: string
  /** Its own layer: the create's env and what set() added. */
  env: Record<string, string>
  /** The image's env, then its own: what a later exec starts from. */
  effective: Record<string, string>
}

export class Env {
  list (): Promise<EnvInfo>
  /** A variable of the effective environment; undefined when not set. */
  get (key: string): Promise<string | undefined>
  set (env: Record<string, string>): Promise<EnvInfo>
  delete (...keys: string[]): Promise<EnvInfo>
}

export interface SandboxNetwork {
  sandbox_id: string
  address: string
  allow_out?: string[] | null
  deny_out?: string[] | null
  networks: string[] | null
  /** Packets the policy refused. */
  egress_denied: number
}

export class Network {
  /** Replace the egress policy ({} lifts it). */
  update (policy?: EgressPolicy): Promise<SandboxNetwork>
}

export interface NetworkInfo {
  name: string
  created_at: string
  members: Array<{ sandbox_id: string, name?: string, address: string }> | null
}

export class Networks {
  create (name: string): Promise<NetworkInfo>
  list (): Promise<NetworkInfo[]>
  delete (name: string): Promise<NetworkInfo>
  connect (name: string, sandbox: Sandbox | string): Promise<NetworkInfo>
  disconnect (name: string, sandbox: Sandbox | string): Promise<NetworkInfo>
}

export interface SecretInfo {
  name: string
  /** What a sandbox holds in the secret's place (in its env, say). */
  placeholder: string
  created_at: string
  updated_at: string
}

export interface EgressDecision {
  time: string
  kind: 'sni' | 'host' | 'address'
  name?: string
  address?: string
  port: number
  allowed: boolean
  rule?: string
  secrets?: string[]
}

export class Secrets {
  set (name: string, value: string): Promise<SecretInfo>
  list (): Promise<SecretInfo[]>
  delete (name: string): Promise<SecretInfo>
  egressLog (sandbox: Sandbox | string): Promise<EgressDecision[]>
}

export interface VolumeInfo {
  name: string
  size_mb: number
  created_at: string
  /** get() only (0 in lists). */
  used_bytes: number
  available_bytes: number
  /** The live sandboxes that mount it. */
  sandbox_ids: string[] | null
}

export class Volumes {
  create (name: string, options?: { sizeMb?: number }): Promise<VolumeInfo>
  list (): Promise<VolumeInfo[]>
  get (name: string): Promise<VolumeInfo>
  delete (name: string): Promise<{ name: string, deleted: boolean }>
}

/** What every git operation takes besides the repository's path. */
export interface GitOptions {
  /** Run git as this user of the image (its home as HOME). */
  user?: string
  env?: Record<string, string> | string[]
  timeoutMs?: number
}

/** Credentials of an http(s) remote, for the one call. */
export interface GitCredentials {
  username?: string
  password?: string
  /** Sent as the password of username (x-access-token by default). */
  token?: string
  /** Where they may go: a host (https) or an http(s) URL prefix
   *  (https://github.com/acme/); by default the host of a URL given. A
   *  remote given by name, whose URL the sandbox can change, needs it. */
  credentialsFor?: string
}

export interface GitIdentity {
  authorName?: string
  authorEmail?: string
}

export interface GitFileStatus {
  path: string
  renamed_from?: string
  index: string
  worktree: string
  status: string
  staged: boolean
  conflicted?: boolean
  untracked?: boolean
}

export interface GitStatus {
  branch?: string
  detached?: boolean
  commit?: string
  upstream?: string
  ahead: number
  behind: number
  clean: boolean
  files: GitFileStatus[] | null
  truncated?: boolean
}

export interface GitCommit {
  hash: string
  parents: string[] | null
  author: string
  email: string
  /** The author date, RFC 3339. */
  date: string
  subject: string
}

export interface GitBranch {
  name: string
  current: boolean
  remote?: boolean
  upstream?: string
  commit: string
  ahead?: number
  behind?: number
  gone?: boolean
}

export class Git {
  init (path: string, options?: GitOptions & { bare?: boolean, initialBranch?: string }): Promise<{ path: string, bare: boolean }>
  clone (url: string, path?: string, options?: GitOptions & GitCredentials & { branch?: string, depth?: number }): Promise<{ path: string, url: string, branch?: string, commit?: string }>
  status (path: string, options?: GitOptions): Promise<GitStatus>
  /** Stage paths (every change without them); the status after. */
  add (path: string, paths?: string[], options?: GitOptions): Promise<GitStatus>
  commit (path: string, message: string, options?: GitOptions & GitIdentity & { all?: boolean, allowEmpty?: boolean, amend?: boolean }): Promise<{ commit: GitCommit }>
  diff (path: string, options?: GitOptions & { staged?: boolean, ref?: string, paths?: string[], nameStatus?: boolean, maxBytes?: number }): Promise<{ diff: string, truncated: boolean, files?: Array<{ status: string, path: string, renamed_from?: string }> }>
  /** Newest first. */
  log (path: string, options?: GitOptions & { ref?: string, maxCount?: number, skip?: number, paths?: string[] }): Promise<{ commits: GitCommit[] | null, truncated?: boolean }>
  branch (path: string, options?: GitOptions & { name?: string, startPoint?: string, delete?: boolean, force?: boolean, remotes?: boolean }): Promise<{ current?: string, branches: GitBranch[] | null }>
  checkout (path: string, ref: string, options?: GitOptions & { create?: boolean, startPoint?: string, force?: boolean }): Promise<GitStatus>
  reset (path: string, options?: GitOptions & { mode?: 'soft' | 'mixed' | 'hard', ref?: string, paths?: string[] }): Promise<GitStatus>
  restore (path: string, paths: string[], options?: GitOptions & { staged?: boolean, worktree?: boolean, source?: string }): Promise<GitStatus>
  remote (path: string, options?: GitOptions & { name?: string, url?: string, remove?: boolean, overwrite?: boolean }): Promise<{ remotes: Array<{ name: string, url: string, push_url?: string }> | null }>
  config (path: string, options?: GitOptions & { key?: string, value?: string, unset?: boolean, scope?: 'local' | 'global' }): Promise<{ entries: Array<{ key: string, value: string }> | null }>
  fetch (path: string, options?: GitOptions & GitCredentials & { remote?: string, branch?: string, prune?: boolean }): Promise<GitStatus>
  push (path: string, options?: GitOptions & GitCredentials & { remote?: string, branch?: string, setUpstream?: boolean, force?: boolean }): Promise<{ remote: string, refs: Array<{ local: string, remote: string, status: string, summary?: string }> | null }>
  pull (path: string, options?: GitOptions & GitCredentials & GitIdentity & { remote?: string, branch?: string, rebase?: boolean, ffOnly?: boolean }): Promise<GitStatus>
}
