// Package templatebuild turns a Dockerfile and its build context into a
// template's layers: Parse reads the Dockerfile with buildkit's parser and
// instruction packages and refuses, with their line, the instructions
// hutch cannot honour; Context is the uploaded build context (a tar) with
// its .dockerignore applied; the build itself (snapsvc's BuildTemplate)
// runs each stage's steps in a sandbox and keeps each step's result as a
// layer keyed by Key.
package templatebuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// MaxDockerfileBytes bounds a Dockerfile.
const MaxDockerfileBytes = 256 << 10

// Plan is a parsed Dockerfile: its stages in order and the ARGs declared
// before the first FROM.
type Plan struct {
	Stages   []Stage
	MetaArgs []instructions.ArgCommand
}

// Stage is one FROM and its steps.
type Stage struct {
	// Name is the stage's AS name ("" for none); Line is its FROM's.
	Name string
	Line int
	// From is the FROM's base, unexpanded: a catalog image, an OCI
	// reference, or an earlier stage's name or index.
	From  string
	Steps []Step
}

// Step is one instruction of a stage.
type Step struct {
	Line int
	// Text is the instruction as written (continuations joined).
	Text string
	Cmd  instructions.Command
}

// Parse reads a Dockerfile. A syntax error, or an instruction hutch
// cannot honour, is S001 naming its line.
func Parse(dockerfile []byte) (*Plan, error) {
	if len(dockerfile) > MaxDockerfileBytes {
		return nil, errdefs.Malformed("the Dockerfile is %d bytes; at most %d are read", len(dockerfile), MaxDockerfileBytes)
	}
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		return nil, errdefs.Malformed("Dockerfile: %s", lineOf(err))
	}
	for _, n := range res.AST.Children {
		if err := refuseNode(n); err != nil {
			return nil, err
		}
	}
	stages, meta, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, errdefs.Malformed("Dockerfile: %s", lineOf(err))
	}
	if len(stages) == 0 {
		return nil, errdefs.Malformed("Dockerfile: no FROM")
	}
	p := &Plan{MetaArgs: meta}
	for _, st := range stages {
		s := Stage{Name: st.Name, Line: firstLine(st.Location), From: st.BaseName}
		for _, c := range st.Commands {
			line := firstLine(c.Location())
			if err := refuseCommand(c, line); err != nil {
				return nil, err
			}
			s.Steps = append(s.Steps, Step{Line: line, Text: fmt.Sprint(c), Cmd: c})
		}
		p.Stages = append(p.Stages, s)
	}
	return p, nil
}

// supported are the instructions a build honours.
var supported = []string{"from", "run", "copy", "add", "env", "arg", "workdir", "user", "label", "expose", "cmd", "entrypoint", "maintainer", "stopsignal"}

// refuseNode refuses, by line, an instruction hutch does not run.
func refuseNode(n *parser.Node) error {
	name := strings.ToLower(n.Value)
	if slices.Contains(supported, name) {
		return nil
	}
	why := map[string]string{
		"healthcheck": "give the template a ready check instead (ready_cmd or ready_port)",
		"onbuild":     "ONBUILD triggers are not run",
		"shell":       "RUN's shell is /bin/sh -c",
		"volume":      "sandboxes mount volumes at create (volumes)",
	}[name]
	if why == "" {
		why = "it is not a Dockerfile instruction hutch knows"
	}
	return errdefs.Malformed("Dockerfile line %d: %s is not supported: %s", n.StartLine, strings.ToUpper(name), why)
}

// refuseCommand refuses the flags of a parsed instruction hutch does not
// honour.
func refuseCommand(c instructions.Command, line int) error {
	bad := func(format string, a ...any) error {
		return errdefs.Malformed("Dockerfile line %d: %s", line, fmt.Sprintf(format, a...))
	}
	switch c := c.(type) {
	case *instructions.RunCommand:
		if len(c.FlagsUsed) > 0 {
			return bad("RUN --%s is not supported", c.FlagsUsed[0])
		}
		if len(c.Files) > 0 {
			return bad("RUN with a here-document is not supported")
		}
	case *instructions.CopyCommand:
		if c.Link || c.Parents || len(c.ExcludePatterns) > 0 {
			return bad("COPY --link, --parents and --exclude are not supported")
		}
		if len(c.SourceContents) > 0 {
			return bad("COPY of a here-document is not supported")
		}
		for _, src := range c.SourcePaths {
			if IsURL(src) || isGit(src) {
				return bad("COPY of a URL (%s): use ADD", clip(src))
			}
		}
	case *instructions.AddCommand:
		if c.Link || len(c.ExcludePatterns) > 0 {
			return bad("ADD --link and --exclude are not supported")
		}
		if len(c.SourceContents) > 0 {
			return bad("ADD of a here-document is not supported")
		}
		gits := 0
		for _, src := range c.SourcePaths {
			if ref, ok, err := ParseGit(src); ok && err != nil {
				return bad("ADD %s: %v", clip(redactURL(src)), err)
			} else if ok && ref.Submodules != nil && *ref.Submodules {
				return bad("ADD %s: submodules are not fetched", clip(redactURL(src)))
			} else if ok {
				gits++
			}
		}
		if gits > 0 && len(c.SourcePaths) > 1 {
			return bad("ADD of a git repository takes it as its only source")
		}
		if c.KeepGitDir != nil && gits == 0 {
			return bad("ADD --keep-git-dir takes a git repository as its source")
		}
		if c.Checksum != "" && !strings.Contains(c.Checksum, "$") {
			if len(c.SourcePaths) != 1 || (!IsURL(c.SourcePaths[0]) && gits == 0) {
				return bad("ADD --checksum takes one http or https URL, or one git repository, as its source")
			}
			if gits == 1 {
				if !gitCheckHash.MatchString(c.Checksum) {
					return bad("ADD --checksum=%s: a git source takes a lowercase hex commit hash", clip(c.Checksum))
				}
				return nil
			}
			if _, _, err := ParseChecksum(c.Checksum); err != nil {
				return bad("ADD %v", err)
			}
		}
	}
	return nil
}

// lineOf is a parser error's message with its line, when it has one.
func lineOf(err error) string {
	var le *parser.LocationError
	if errors.As(err, &le) && len(le.Locations) > 0 && len(le.Locations[0]) > 0 {
		return fmt.Sprintf("line %d: %s", le.Locations[0][0].Start.Line, err.Error())
	}
	return err.Error()
}

func firstLine(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[0].Start.Line
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Vars are a stage's variables as an expansion sees them: its ARGs and
// ENVs, later entries winning.
type Vars []string

// Get implements shell.EnvGetter.
func (v Vars) Get(key string) (string, bool) {
	for i := len(v) - 1; i >= 0; i-- {
		if k, val, _ := strings.Cut(v[i], "="); k == key {
			return val, true
		}
	}
	return "", false
}

// Keys implements shell.EnvGetter.
func (v Vars) Keys() []string {
	var keys []string
	for _, kv := range v {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Set is v with key set to val.
func (v Vars) Set(key, val string) Vars {
	out := slices.DeleteFunc(slices.Clone(v), func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	return append(out, key+"="+val)
}

// Expand expands the variables of c's words ($VAR, ${VAR:-x}) with vars,
// as buildkit's shell lexer does.
func Expand(c instructions.Command, vars Vars) error {
	lex := shell.NewLex('\\')
	word := func(w string) (string, error) {
		out, _, err := lex.ProcessWord(w, vars)
		return out, err
	}
	if ex, ok := c.(instructions.SupportsSingleWordExpansion); ok {
		if err := ex.Expand(word); err != nil {
			return err
		}
	}
	return nil
}

// ExpandWord expands one word (a FROM's base) with vars.
func ExpandWord(w string, vars Vars) (string, error) {
	out, _, err := shell.NewLex('\\').ProcessWord(w, vars)
	return out, err
}

// Key is the cache key of a step: its parent's key, the instruction and
// what it reads (files' digests, the state it runs in).
func Key(parent string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(parent))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
