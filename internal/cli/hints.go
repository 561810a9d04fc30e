package cli

import (
	"regexp"
	"slices"

	"github.com/hutch-dev/hutch/api"
)

// Errors' hints name the function to call (sandbox::process::list); on the
// command line the CLI names its command for it instead (hutch ps).

// cliCommands maps function ids to the command that calls them. git's
// operations and fs's are "hutch git ID OP" and "hutch fs OP".
var cliCommands = map[string]string{
	api.FnCreate: "create", api.FnExec: "exec", api.FnExecStream: "exec",
	api.FnStop: "stop", api.FnList: "list", api.FnGet: "list",
	api.FnPause: "pause", api.FnResume: "resume", api.FnSetTimeout: "set-timeout", api.FnFork: "fork",
	api.FnSnapshotCreate: "snapshot create", api.FnSnapshotList: "snapshot ls", api.FnSnapshotDelete: "snapshot rm",
	api.FnTemplateCreate: "template create", api.FnTemplateList: "template ls", api.FnTemplateDelete: "template rm",
	api.FnVolumeCreate: "volume create", api.FnVolumeList: "volume ls", api.FnVolumeGet: "volume get", api.FnVolumeDelete: "volume rm",
	api.FnAlertCreate: "alert create", api.FnAlertList: "alert ls", api.FnAlertDelete: "alert rm", api.FnAlertHistory: "alert history",
	api.FnEnvList: "env ls", api.FnEnvGet: "env get", api.FnEnvSet: "env set", api.FnEnvDelete: "env rm",
	api.FnEventsList: "events", api.FnEventsStream: "events",
	api.FnContextCreate: "context create", api.FnContextList: "context ls",
	api.FnContextRestart: "context restart", api.FnContextDelete: "context rm",
	api.FnInterrupt: "context interrupt", api.FnRunCode: "run-code", api.FnInstall: "install",
	api.FnJobSubmit: "job submit", api.FnJobGet: "job get", api.FnJobList: "job ls", api.FnJobCancel: "job cancel",
	api.FnJobDLQ: "job dlq", api.FnJobRetry: "job retry",
	api.FnNetworkCreate: "network create", api.FnNetworkList: "network ls", api.FnNetworkDelete: "network rm",
	api.FnNetworkConnect: "network connect", api.FnNetworkDisconnect: "network disconnect", api.FnNetworkUpdate: "network policy",
	api.FnPortExpose: "expose", api.FnPortList: "ports", api.FnPortUnexpose: "unexpose",
	api.FnProcessStart: "exec -d", api.FnProcessGet: "ps", api.FnProcessList: "ps", api.FnProcessOutput: "logs",
	api.FnProcessLogs: "logs", api.FnProcessStdin: "attach", api.FnProcessWait: "attach",
	api.FnProcessSignal: "kill", api.FnProcessKill: "kill",
	api.FnFsUnpack: "upload", api.FnFsPack: "download",
	// issue 40: a volume's files
	api.FnVolumeFsList: "volume files", api.FnVolumeFsRead: "volume cat", api.FnVolumeFsWrite: "volume put",
}

// functionID matches a function id in prose.
var functionID = regexp.MustCompile(`sandbox(::[a-z_]+)+`)

// cliCommand is the command line that calls function id, "" for none.
func cliCommand(id string) string {
	if c, ok := cliCommands[id]; ok {
		return "hutch " + c
	}
	if slices.Contains(api.GitFns, id) {
		return "hutch git ID " + api.FnOp(id)
	}
	if slices.Contains(api.FsFns, id) {
		return "hutch fs " + api.FnOp(id)
	}
	return ""
}

// cliHint is hint with the function ids it names turned into commands
// ('hutch ps'); ids without a command stay.
func cliHint(hint string) string {
	return functionID.ReplaceAllStringFunc(hint, func(id string) string {
		if c := cliCommand(id); c != "" {
			return "'" + c + "'"
		}
		return id
	})
}
