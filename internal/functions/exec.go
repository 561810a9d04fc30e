package functions

import "github.com/hutch-dev/hutch/api"

// registerExec adds the two timeout semantics of exec over one manager
// call: api.FnExec, the contract's (a timeout is S200), and
// api.FnExecResult, the REST route's (a timeout is a result).
func registerExec(t *Table) {
	exec := t.deps.Sandboxes.Exec
	add(t, api.FnExec, "Execute a command inside a live sandbox; a timeout is S200", exec, WithTimeouts(TimeoutIsError))
	add(t, api.FnExecResult, "Execute a command inside a live sandbox; a timeout is a result with timed_out set and the output so far (hutch extension)", exec,
		ObservedAs(api.FnExec))
}
