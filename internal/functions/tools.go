package functions

import "github.com/hutch-dev/hutch/api"

// The functions offered to agents as MCP tools, by function id: a
// function listed here is a tool of internal/mcpserver, its request's
// schema the tool's input, with no code of its own there. register sets
// it as the function's Tool. A function missing from the table (its
// dependency absent) has no tool.
//
// None is in the default set (Default), which is the tools
// internal/mcpserver writes itself (run_code, run_command, file_*, git_*,
// ...): agents choose these by area.

// the hints of the four kinds of tool.
var (
	reads    = api.Tool{ReadOnly: true, Idempotent: true}
	changes  = api.Tool{}
	sets     = api.Tool{Idempotent: true}
	destroys = api.Tool{Destructive: true, Idempotent: true}
)

func tool(kind api.Tool, area, name, desc string) api.Tool {
	kind.Area, kind.Name, kind.Description = area, name, desc
	return kind
}

func openWorld(t api.Tool) api.Tool { t.OpenWorld = true; return t }

func collect(t api.Tool, n int) api.Tool { t.Collect = n; return t }

var tools = map[string]api.Tool{
	// sandboxes
	api.FnCatalogList: tool(reads, api.ToolAreaSandboxes, "image_list", "The catalog's images (presets and the operator's own, with their source) and the isolation runtimes of this host: sandbox_create takes an image's name and a runtime (S100 when the operator does not allow that image)."),
	api.FnGet:         tool(reads, api.ToolAreaSandboxes, "sandbox_get", "Describe one sandbox: image, state (running, paused, stopped and why), cpus, memory, age, lifetime."),
	api.FnPause:       tool(sets, api.ToolAreaSandboxes, "sandbox_pause", "Pause a sandbox: depth freeze (default) keeps it in memory and stops its CPU use; depth hibernate writes it to disk and frees its memory; depth files keeps only its files, and its resume boots it again on them. Tools answer S005 until sandbox_resume."),
	api.FnResume:      tool(sets, api.ToolAreaSandboxes, "sandbox_resume", "Resume a paused or hibernated sandbox: its processes go on where they were."),
	api.FnSetTimeout:  tool(sets, api.ToolAreaSandboxes, "sandbox_set_timeout", "Renew a sandbox's lifetime: it is stopped timeout_secs from now, whatever its activity. Call again to extend it."),

	// interpreter
	api.FnContextCreate:  tool(changes, api.ToolAreaInterpreter, "context_create", "Start a separate interpreter context (language python, javascript or bash; cwd, env) with its own variables; pass its context_id to run_code."),
	api.FnContextList:    tool(reads, api.ToolAreaInterpreter, "context_list", "List a sandbox's interpreter contexts: id, language, state."),
	api.FnContextRestart: tool(destroys, api.ToolAreaInterpreter, "context_restart", "Restart a context's interpreter afresh: its variables and imports are lost."),
	api.FnContextDelete:  tool(destroys, api.ToolAreaInterpreter, "context_delete", "Stop an interpreter context and forget it."),
	api.FnInterrupt:      tool(changes, api.ToolAreaInterpreter, "code_interrupt", "Interrupt the code running in a context (like Ctrl-C); the context keeps its state."),
	api.FnInstall:        openWorld(tool(changes, api.ToolAreaInterpreter, "package_install", "Install packages (manager pip or npm, packages [...]) into a sandbox created with network: true; the installer's output comes as progress, then its exit code.")),

	// processes
	api.FnProcessStart:  tool(changes, api.ToolAreaProcesses, "process_start", "Start a background process (argv, or cmd and args; workdir, env, user; stdin: true keeps its stdin open for process_stdin; tag labels it) and return its pid at once."),
	api.FnProcessList:   tool(reads, api.ToolAreaProcesses, "process_list", "List every process of a sandbox: pid, parent, user, command, state, cpu %, memory; hutch's are marked with their tag."),
	api.FnProcessGet:    tool(reads, api.ToolAreaProcesses, "process_get", "Describe a process hutch started: running or its exit code, and its output so far."),
	api.FnProcessStdin:  tool(changes, api.ToolAreaProcesses, "process_stdin", "Write data to the stdin of a process started with stdin: true (base64 for bytes); close: true closes it (EOF)."),
	api.FnProcessWait:   tool(reads, api.ToolAreaProcesses, "process_wait", "Wait until a process exits or timeout_ms passes; answers its state and exit code."),
	api.FnProcessSignal: tool(destroys, api.ToolAreaProcesses, "process_signal", "Send a signal (TERM by default; INT, HUP, KILL, ...) to a process and its group."),

	// files
	api.FnFsStat:  tool(reads, api.ToolAreaFiles, "file_stat", "Describe a path: type, size, mode, owner, modification time, a symlink's target."),
	api.FnFsMkdir: tool(sets, api.ToolAreaFiles, "file_mkdir", "Make a directory (parents: true makes missing parents)."),
	api.FnFsRm:    tool(destroys, api.ToolAreaFiles, "file_remove", "Remove a file, or a directory with recursive: true."),
	api.FnFsMv:    tool(changes, api.ToolAreaFiles, "file_move", "Move or rename a path (src, dst); overwrite: true replaces what is at dst."),
	api.FnFsChmod: tool(sets, api.ToolAreaFiles, "file_chmod", "Change a path's permissions (mode such as \"755\"; uid, gid; recursive)."),

	// git
	api.FnGitInit:     tool(sets, api.ToolAreaGit, "git_init", "Create a git repository at path (initial_branch, bare)."),
	api.FnGitBranch:   tool(changes, api.ToolAreaGit, "git_branch", "List branches with their upstream and ahead/behind; name creates a branch (delete: true deletes it)."),
	api.FnGitCheckout: tool(changes, api.ToolAreaGit, "git_checkout", "Switch to a branch, tag or commit (ref), or create a branch (create: true, start_point)."),
	api.FnGitReset:    tool(destroys, api.ToolAreaGit, "git_reset", "Move the current branch to ref (mode soft, mixed or hard: hard discards changes), or unstage paths."),
	api.FnGitRestore:  tool(destroys, api.ToolAreaGit, "git_restore", "Discard changes of paths in the work tree, or unstage them (staged: true), from source."),
	api.FnGitRemote:   tool(changes, api.ToolAreaGit, "git_remote", "List remotes; name with url adds one, remove: true removes it."),
	api.FnGitConfig:   tool(changes, api.ToolAreaGit, "git_config", "Get, set, unset or list git config (user.name, user.email, ...), local or global."),
	api.FnGitFetch:    openWorld(tool(sets, api.ToolAreaGit, "git_fetch", "Fetch from a remote (origin by default) with credentials for this call only; answers the status.")),

	// env
	api.FnEnvList:   tool(reads, api.ToolAreaEnv, "env_list", "A sandbox's environment: the variables set on it and the effective environment commands start with."),
	api.FnEnvGet:    tool(reads, api.ToolAreaEnv, "env_get", "One variable (key) of a sandbox's effective environment."),
	api.FnEnvSet:    tool(sets, api.ToolAreaEnv, "env_set", "Set variables (env: {\"KEY\": \"value\"}) for the commands, processes and contexts started after it."),
	api.FnEnvDelete: tool(destroys, api.ToolAreaEnv, "env_delete", "Remove variables (keys: [...]) from a sandbox's environment for later commands."),

	// snapshots
	api.FnSnapshotList:   tool(reads, api.ToolAreaSnapshots, "snapshot_list", "List your snapshots: id, name, the sandbox they were taken of, size. Restore one with sandbox_create snapshot_id."),
	api.FnSnapshotGet:    tool(reads, api.ToolAreaSnapshots, "snapshot_get", "Describe one snapshot."),
	api.FnSnapshotDelete: tool(destroys, api.ToolAreaSnapshots, "snapshot_delete", "Delete a snapshot for good."),

	// templates
	api.FnTemplateCreate: tool(sets, api.ToolAreaTemplates, "template_create", "Name a starting point for sandbox_create template: an image and defaults (cpus, memory_mb, env, network...), a snapshot_id, or the files of a running sandbox (from_sandbox)."),
	api.FnTemplateList:   tool(reads, api.ToolAreaTemplates, "template_list", "List your templates."),
	api.FnTemplateGet:    tool(reads, api.ToolAreaTemplates, "template_get", "Describe one template."),
	api.FnTemplateDelete: tool(destroys, api.ToolAreaTemplates, "template_delete", "Delete a template; sandboxes made from it go on."),

	// ports
	api.FnPortList:     tool(reads, api.ToolAreaPorts, "port_list", "List a sandbox's exposed ports with their preview URLs."),
	api.FnPortUnexpose: tool(destroys, api.ToolAreaPorts, "port_unexpose", "Make an exposed port unreachable again."),

	// events
	api.FnEventsList:   tool(reads, api.ToolAreaEvents, "event_list", "What happened to your sandboxes (created, paused, exec finished, stopped and why, alert fired, ...), oldest first; filter by sandbox_id, type (\"sandbox.*\"), since, after (an id); next is the next page's after."),
	api.FnEventsStream: collect(tool(reads, api.ToolAreaEvents, "event_wait", "Wait for the next event (of type, of sandbox_id; after \"now\" for only new ones, or an event id) and answer it; count asks for more than one; wait_secs bounds the wait (timed_out when none came)."), 1),

	// metrics
	api.FnMetrics:       tool(reads, api.ToolAreaMetrics, "sandbox_metrics", "A sandbox's resource use now: cpu, memory, pids, disk."),
	api.FnMetricsStream: collect(tool(reads, api.ToolAreaMetrics, "metrics_watch", "A sandbox's resource use over time: count samples, one every interval_ms (1000 by default), each progress as it comes."), 5),

	// alerts
	api.FnAlertCreate:  tool(changes, api.ToolAreaAlerts, "alert_create", "Watch a sandbox: when metric (cpu %, memory MiB, pids, disk MiB) stays above threshold for for_secs, record alert.fired and notify, pause or stop it (action)."),
	api.FnAlertList:    tool(reads, api.ToolAreaAlerts, "alert_list", "List your alerts, of one sandbox or all."),
	api.FnAlertDelete:  tool(destroys, api.ToolAreaAlerts, "alert_delete", "Delete an alert."),
	api.FnAlertHistory: tool(reads, api.ToolAreaAlerts, "alert_history", "The alerts that fired, as alert.fired events."),

	// networks
	api.FnNetworkCreate:     tool(sets, api.ToolAreaNetworks, "network_create", "Create a sandbox network: sandboxes on it reach each other by address, name or id."),
	api.FnNetworkList:       tool(reads, api.ToolAreaNetworks, "network_list", "List your sandbox networks and their members."),
	api.FnNetworkDelete:     tool(destroys, api.ToolAreaNetworks, "network_delete", "Delete a sandbox network that has no members."),
	api.FnNetworkConnect:    tool(sets, api.ToolAreaNetworks, "network_connect", "Put a running sandbox created with network: true on a network."),
	api.FnNetworkDisconnect: tool(destroys, api.ToolAreaNetworks, "network_disconnect", "Take a sandbox off a network."),
	api.FnNetworkUpdate:     tool(sets, api.ToolAreaNetworks, "network_set_egress", "Replace a sandbox's egress policy: allow_out and deny_out lists of hosts, CIDRs or host:port; empty lists lift it."),
	// issue 37: secrets and the egress log
	api.FnSecretSet:    tool(sets, api.ToolAreaNetworks, "secret_set", "Store a secret (name, value) for egress transforms: {host, headers: {Authorization: \"Bearer {{secret.NAME}}\"}} writes it into a sandbox's HTTPS requests to host; the sandbox never sees it."),
	api.FnSecretList:   tool(reads, api.ToolAreaNetworks, "secret_list", "List your secrets: names and placeholders, never values."),
	api.FnSecretDelete: tool(destroys, api.ToolAreaNetworks, "secret_delete", "Delete a secret."),
	api.FnEgressLog:    tool(reads, api.ToolAreaNetworks, "egress_log", "The egress proxy's recent decisions about a sandbox: name (SNI or Host), port, allowed or refused and by which rule."),

	// volumes
	api.FnVolumeCreate: tool(sets, api.ToolAreaVolumes, "volume_create", "Create a named volume (size_mb) that outlives sandboxes; mount it with sandbox_create volumes."),
	api.FnVolumeList:   tool(reads, api.ToolAreaVolumes, "volume_list", "List your volumes."),
	api.FnVolumeGet:    tool(reads, api.ToolAreaVolumes, "volume_get", "Describe a volume: size, bytes used and free, the sandboxes that mount it."),
	api.FnVolumeDelete: tool(destroys, api.ToolAreaVolumes, "volume_delete", "Delete a volume and all its data; refused while a sandbox mounts it."),

	// jobs
	api.FnJobSubmit: tool(changes, api.ToolAreaJobs, "job_submit", "Queue a command (argv, or cmd and args) to run in order in sandbox_id, or in a sandbox made for it (image or template) and stopped after; retried when the infrastructure fails it. Answers the job id."),
	api.FnJobGet:    tool(reads, api.ToolAreaJobs, "job_get", "Describe a job: state, attempts, result, last error."),
	api.FnJobList:   tool(reads, api.ToolAreaJobs, "job_list", "List your jobs, newest first, by state or sandbox."),
	api.FnJobCancel: tool(destroys, api.ToolAreaJobs, "job_cancel", "Cancel a queued job, or kill a running one."),
	api.FnJobRetry:  tool(changes, api.ToolAreaJobs, "job_retry", "Queue a job of the dead-letter list again."),
}
