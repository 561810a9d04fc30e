package sandbox

import (
	"cmp"
	"errors"

	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// The ends the manager gives sandboxes itself (the idle reaper's are
// package idle's); the others come from the runtime (Instance.Exit) or
// the agent (agentEnd).
var (
	endRequest  = runtime.End{Cause: runtime.CauseRequest, Detail: "stopped by request"}
	endShutdown = runtime.End{Cause: runtime.CauseShutdown, Detail: "daemon shut down"}
	endRestart  = runtime.End{Cause: runtime.CauseRestart, Detail: "daemon restarted; the sandbox was destroyed"}
	// endAgentGone is the end of a sandbox whose agent stream closed while
	// its runtime knows nothing of an end.
	endAgentGone = runtime.End{Cause: runtime.CauseAgent, Detail: "the sandbox agent went away"}
)

// endOf is why a sandbox with instance inst and agent connection ac
// ended: the agent protocol broken from inside the sandbox, else what its
// runtime knows, else that its agent went away.
func endOf(inst runtime.Instance, ac *agentclient.Client) runtime.End {
	if v := violation(ac); v.Ended() {
		return v
	}
	if inst != nil {
		if e := inst.Exit(); e.Ended() {
			return e
		}
	}
	return endAgentGone
}

// violation is how the sandbox broke the agent protocol, or the zero End.
func violation(ac *agentclient.Client) runtime.End {
	var pe *agentclient.ProtocolError
	if ac != nil && errors.As(ac.Err(), &pe) {
		return runtime.End{Cause: runtime.CauseAgent, Detail: pe.Error()}
	}
	return runtime.End{}
}

// agentEnd is the end of a sandbox whose agent failed a call with err: a
// deadline it did not answer within, or an answer it had no right to give
// (too large, malformed, out of protocol).
func agentEnd(err error) runtime.End {
	var na *agentclient.NoAnswerError
	if errors.As(err, &na) {
		return runtime.End{Cause: runtime.CauseAgent, Detail: na.Error()}
	}
	return runtime.End{Cause: runtime.CauseAgent, Detail: "the sandbox agent failed: " + safetext.Line(err.Error(), safetext.MaxLine)}
}

// stopText is the end's text as S004 shows it.
func stopText(end runtime.End) string { return cmp.Or(end.String(), "stopped") }
