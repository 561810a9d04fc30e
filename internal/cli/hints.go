package cli

import (
	"regexp"
	"strings"
)

// Errors' hints name the function to call (sandbox::process::list); on the
// command line the CLI names its command for it instead (hutch ps).

// cliCommands maps function ids to the command that calls them. git's
// operations and fs's are "hutch git ID OP" and "hutch fs OP".
var cliCommands = map[string]string{
	"sandbox::create": "create", "sandbox::exec": "exec", "sandbox::exec::stream": "exec",
	"sandbox::stop": "stop", "sandbox::list": "list", "sandbox::get": "list",
	"sandbox::pause": "pause", "sandbox::resume": "resume", "sandbox::set_timeout": "set-timeout", "sandbox::fork": "fork",
	"sandbox::snapshot::create": "snapshot create", "sandbox::snapshot::list": "snapshot ls", "sandbox::snapshot::delete": "snapshot rm",
	"sandbox::template::create": "template create", "sandbox::template::list": "template ls", "sandbox::template::delete": "template rm",
	"sandbox::volume::create": "volume create", "sandbox::volume::list": "volume ls", "sandbox::volume::get": "volume get", "sandbox::volume::delete": "volume rm",
	"sandbox::alert::create": "alert create", "sandbox::alert::list": "alert ls", "sandbox::alert::delete": "alert rm", "sandbox::alert::history": "alert history",
	"sandbox::env::list": "env ls", "sandbox::env::get": "env get", "sandbox::env::set": "env set", "sandbox::env::delete": "env rm",
	"sandbox::events::list": "events", "sandbox::events::stream": "events",
	"sandbox::interpreter::context::create": "context create", "sandbox::interpreter::context::list": "context ls",
	"sandbox::interpreter::context::restart": "context restart", "sandbox::interpreter::context::delete": "context rm",
	"sandbox::interpreter::interrupt": "context interrupt", "sandbox::interpreter::run": "run-code", "sandbox::interpreter::install": "install",
	"sandbox::job::submit": "job submit", "sandbox::job::get": "job get", "sandbox::job::list": "job ls", "sandbox::job::cancel": "job cancel",
	"sandbox::job::dlq": "job dlq", "sandbox::job::retry": "job retry",
	"sandbox::network::create": "network create", "sandbox::network::list": "network ls", "sandbox::network::delete": "network rm",
	"sandbox::network::connect": "network connect", "sandbox::network::disconnect": "network disconnect", "sandbox::network::update": "network policy",
	"sandbox::port::expose": "expose", "sandbox::port::list": "ports", "sandbox::port::unexpose": "unexpose",
	"sandbox::process::start": "exec -d", "sandbox::process::get": "ps", "sandbox::process::list": "ps", "sandbox::process::output": "logs",
	"sandbox::process::logs": "logs", "sandbox::process::stdin": "attach", "sandbox::process::wait": "attach",
	"sandbox::process::signal": "kill", "sandbox::process::kill": "kill",
	"sandbox::fs::unpack": "upload", "sandbox::fs::pack": "download",
}

// functionID matches a function id in prose.
var functionID = regexp.MustCompile(`sandbox(::[a-z_]+)+`)

// cliCommand is the command line that calls function id, "" for none.
func cliCommand(id string) string {
	if c, ok := cliCommands[id]; ok {
		return "hutch " + c
	}
	if op, ok := strings.CutPrefix(id, "sandbox::git::"); ok {
		return "hutch git ID " + op
	}
	if op, ok := strings.CutPrefix(id, "sandbox::fs::"); ok && !strings.Contains(op, "::") {
		return "hutch fs " + op
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
