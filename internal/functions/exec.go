package functions

// FnExecResult is sandbox::exec with a timeout as a result (timed_out set,
// the output so far), the REST route's semantics (hutch extension);
// through sandbox::exec, the contract's, a timeout is S200.
const FnExecResult = "hutch::exec"

// registerExec adds the two timeout semantics of exec over one manager call.
func registerExec(t *Table) {
	exec := t.deps.Sandboxes.Exec
	add(t, "sandbox::exec", "Execute a command inside a live sandbox; a timeout is S200", exec, WithTimeouts(TimeoutIsError))
	add(t, FnExecResult, "Execute a command inside a live sandbox; a timeout is a result with timed_out set and the output so far (hutch extension)", exec,
		ObservedAs("sandbox::exec"))
}
