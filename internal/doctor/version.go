package doctor

import (
	"runtime/debug"
	"strings"
)

// Describe is a Go build in one line: the main module's version, the VCS
// revision it was built from (marked dirty when it had changes), its time
// and the Go version.
func Describe(bi *debug.BuildInfo) string {
	parts := []string{bi.Main.Version}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "-dirty"
		}
		parts = append(parts, "commit "+rev)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, ", ")
}
