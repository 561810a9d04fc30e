package snapsvc

// A template's last build (issue 39): its summary and the end of its
// log, kept in the template's record for the console's images page
// (sandbox::template::list's last_build).

import (
	"fmt"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// What a template keeps of its last build's log.
const (
	keptLogLines  = 100
	keptLineBytes = 300
)

// buildLog is the end of a build's log.
type buildLog struct{ lines []string }

// add logs ev: a step as "line N: INSTRUCTION" (" (cached)" for a hit),
// a step's output indented, the start command and snapshot by phase.
func (l *buildLog) add(ev api.TemplateBuildEvent) {
	var line string
	switch {
	case ev.Phase == "step":
		line = fmt.Sprintf("line %d: %s", ev.Line, ev.Instruction)
		if ev.Cached {
			line += " (cached)"
		}
	case ev.Phase == "output":
		line = "  " + ev.Output
	case ev.Output != "":
		line = ev.Phase + ": " + ev.Output
	default:
		return
	}
	l.lines = append(l.lines, safetext.Line(line, keptLineBytes))
	if len(l.lines) > keptLogLines {
		l.lines = l.lines[len(l.lines)-keptLogLines:]
	}
}

// summary is the build's summary as it ends (err nil: it succeeded).
func (b *build) summary(start time.Time, err error) *api.TemplateBuildSummary {
	sum := &api.TemplateBuildSummary{Status: "succeeded", Steps: b.steps, CachedSteps: b.cached, Layers: len(b.layers),
		DurationMs: uint64(time.Since(start).Milliseconds()), FinishedAt: stamp(time.Now().UTC()), Log: append([]string{}, b.log.lines...)}
	if err != nil {
		sum.Status, sum.Error = "failed", safetext.Line(errdefs.As(err).Message, keptLineBytes*4)
	}
	return sum
}

// keepFailedBuild records a failed build's summary in the template it
// was rebuilding, if there is one.
func (s *Service) keepFailedBuild(owner, name string, sum *api.TemplateBuildSummary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rec templateRecord
	if ok, err := s.templates.Get(templateKey(owner, name), &rec); err != nil || !ok {
		return
	}
	rec.LastBuild = sum
	if err := s.templates.Put(rec.key(), &rec); err != nil {
		s.log.Warn("recording a failed template build", "template", name, "err", err)
	}
}
