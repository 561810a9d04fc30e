// Command seccompgen precompiles runsc's seccomp filters, as gVisor's own
// (Bazel) release builds do, into a copy of the gVisor module that `make
// build` then builds runsc from.
//
// runsc installs a seccomp filter on its sandbox (the Sentry) and on its
// gofer at every start. A runsc built with `go build` has no precompiled
// filters and compiles them each time: about 30 ms of every sandbox boot on
// the machines hutch is measured on (runsc's debug log says "No precompiled
// program found ... This slows down sandbox startup"). seccompgen rewrites
// the two filter_precompiled.go files of the copy so that they register the
// programs for the configurations hutch runs: the systrap platform, without
// GPU, TPU or RDMA proxies, built without cgo. Any other configuration
// still works; runsc then compiles its filter at start as before.
//
// Usage: seccompgen GVISOR_MODULE_COPY
//
// The copy may hard-link the module cache's read-only files: the two files
// are removed and written anew, never written through.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gvisor.dev/gvisor/pkg/seccomp/precompiledseccomp"
	bootconfig "gvisor.dev/gvisor/runsc/boot/filter/config"
	goferconfig "gvisor.dev/gvisor/runsc/fsgofer/filter/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: seccompgen GVISOR_MODULE_COPY")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "seccompgen:", err)
		os.Exit(1)
	}
}

// target is one filter_precompiled.go to rewrite, with the programs of its
// package and the ones hutch needs.
type target struct {
	rel      string
	programs func() ([]precompiledseccomp.Program, error)
	keep     func(name string) bool
}

// targets are the Sentry's filters and the gofer's. A program's name is
// its configuration key, e.g. `GOARCH="amd64" Platform="systrap" ...`.
var targets = []target{
	{
		rel:      "runsc/boot/filter/filter_precompiled.go",
		programs: bootconfig.PrecompiledPrograms,
		keep: func(name string) bool {
			return hasAll(name, `Platform="systrap"`, "NVProxy=false", "TPUProxy=false", "RDMAProxy=false", "CgoEnabled=false")
		},
	},
	{
		rel:      "runsc/fsgofer/filter/filter_precompiled.go",
		programs: goferconfig.PrecompiledPrograms,
		keep:     func(name string) bool { return hasAll(name, "CgoEnabled=false") },
	},
}

func hasAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func run(dir string) error {
	for _, t := range targets {
		if err := rewrite(dir, t); err != nil {
			return fmt.Errorf("%s: %w", t.rel, err)
		}
	}
	return nil
}

// rewrite registers t's kept programs in its file under dir.
func rewrite(dir string, t target) error {
	path := filepath.Join(dir, t.rel)
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	programs, err := t.programs()
	if err != nil {
		return fmt.Errorf("precompiling: %w", err)
	}
	var reg strings.Builder
	n := 0
	for _, p := range programs {
		if t.keep(p.Name) {
			reg.WriteString(p.Registration("\t", "precompiledseccomp", "programs"))
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("none of the %d precompiled programs is for hutch's configuration; has gVisor renamed its options?", len(programs))
	}
	out := string(src)
	for _, r := range []struct{ old, new string }{
		{"const PrecompilationDisabledAtBuildTime = true", "const PrecompilationDisabledAtBuildTime = false"},
		{"\tprograms := make(map[string]precompiledseccomp.Program)\n", "\tprograms := make(map[string]precompiledseccomp.Program)\n" + reg.String()},
	} {
		if strings.Count(out, r.old) != 1 {
			return fmt.Errorf("the file does not hold exactly one %q to replace; has gVisor changed it?", strings.TrimSpace(r.old))
		}
		out = strings.Replace(out, r.old, r.new, 1)
	}
	if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Printf("seccompgen: %d precompiled programs in %s\n", n, t.rel)
	return nil
}
