package runtime

// Cause is why a sandbox ended, as a fixed word that metrics, events and
// clients can switch on; the End's Detail says the rest in prose.
type Cause string

// The causes of a sandbox's end.
const (
	// CauseNone: the sandbox has not ended, or ended by an ordinary Destroy.
	CauseNone Cause = ""
	// CauseRequest: a caller stopped it.
	CauseRequest Cause = "request"
	// CauseIdle: the idle reaper stopped it.
	CauseIdle Cause = "idle"
	// CauseLifetime: its maximum lifetime ran out.
	CauseLifetime Cause = "lifetime"
	// CauseOutOfMemory: the host killed it at its memory limit.
	CauseOutOfMemory Cause = "out_of_memory"
	// CausePidsLimit: it hit its process limit.
	CausePidsLimit Cause = "pids_limit"
	// CauseAgent: its agent broke a deadline, a size limit or the protocol,
	// or went away.
	CauseAgent Cause = "agent_failure"
	// CauseExited: the runtime ended for another reason.
	CauseExited Cause = "exited"
	// CauseShutdown: the daemon shut down.
	CauseShutdown Cause = "shutdown"
	// CauseRestart: an earlier daemon held it and died.
	CauseRestart Cause = "daemon_restart"
	// CauseAlert: an alert with action stop fired.
	CauseAlert Cause = "alert"
)

// End is why a sandbox ended: a Cause and a line of detail. Detail may
// carry bytes from the sandbox; whoever shows it escapes it.
type End struct {
	Cause  Cause  `json:"cause"`
	Detail string `json:"detail,omitempty"`
}

// String is the end as one line: the detail, or else the cause.
func (e End) String() string {
	if e.Detail != "" {
		return e.Detail
	}
	return string(e.Cause)
}

// Ended reports whether e records an end.
func (e End) Ended() bool { return e.Cause != CauseNone }
