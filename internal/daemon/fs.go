package daemon

import (
	"github.com/sbx-dev/sbx/internal/functions"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// The manager must serve the filesystem functions: functions.New registers
// sandbox::fs::* only when its Sandboxes implements functions.FS.
var _ functions.FS = (*sandbox.Manager)(nil)
