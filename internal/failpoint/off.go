//go:build !failpoints

// Package failpoint marks the steps of a multi-step operation where the
// crash test kills the daemon (issue 38: 1). A call site is one line,
// failpoint.Hit("snapshot.write.after-checkpoint"); in a build with the
// tag failpoints, the daemon SIGKILLs itself at the point named by
// $HUTCH_FAILPOINT. In every other build Hit does nothing and costs a call.
package failpoint

import "io"

// Hit does nothing: this binary was built without failpoints.
func Hit(string) {}

// Enabled reports whether this binary was built with failpoints.
const Enabled = false

// Reader returns r: this binary was built without failpoints.
func Reader(_ string, r io.Reader) io.Reader { return r }
