package daemon

import (
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// The manager must serve the filesystem functions: functions.New registers
// sandbox::fs::* only when its Sandboxes implements functions.FS.
var _ functions.FS = (*sandbox.Manager)(nil)
