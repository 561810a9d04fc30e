//go:build failpoints

package failpoint

import (
	"io"
	"os"
	"syscall"
)

// armed is the point named by HUTCH_FAILPOINT, read once at start.
var armed = os.Getenv(Env)

// Hit kills this process with SIGKILL when name is the armed point: a
// crash at that step, with no deferred cleanup and no flush.
func Hit(name string) {
	if armed != "" && name == armed {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Enabled reports whether this binary was built with failpoints.
const Enabled = true

// Reader returns r, or, when name is the armed point, r that kills this
// process once its first bytes were read: a crash in the middle of a stream.
func Reader(name string, r io.Reader) io.Reader {
	if armed == "" || name != armed {
		return r
	}
	return crashReader{r, name}
}

type crashReader struct {
	io.Reader
	name string
}

func (c crashReader) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	if n > 0 {
		Hit(c.name)
	}
	return n, err
}
