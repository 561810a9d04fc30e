package runtime

// AgentPath is where every runtime puts the hutch-agent binary inside a
// sandbox, and runs it from as PID 1. Images carry an empty regular file
// there as its mount point.
const AgentPath = "/.hutch/hutch-agent"
