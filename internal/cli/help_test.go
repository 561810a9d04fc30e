package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// What `--help` may show after a flag's name: its value's type as pflag
// names it, or a placeholder in capitals (SIZE) given in backticks.
var (
	valueType   = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// TestHelpFlagTypes renders every command's --help and checks each flag's
// type column: pflag takes a usage string's first backticked word for the
// value's name, so "`hutch ps`" in a usage turned into "--tag hutch ps".
func TestHelpFlagTypes(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.Fields(cmd.CommandPath())[1:]
		out, errOut, code := h.run("", append(path, "--help")...)
		if code != 0 {
			t.Errorf("hutch %s --help: exit %d: %s", strings.Join(path, " "), code, errOut)
		}
		check := func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if name == "" {
				return
			}
			// Without backticks pflag shows the value's type; with them, the
			// backticked text, which must be a placeholder.
			want := valueType
			if strings.Contains(f.Usage, "`") {
				want = placeholder
			}
			if !want.MatchString(name) {
				t.Errorf("hutch %s: flag --%s shows %q as its type (usage %q)", strings.Join(path, " "), f.Name, name, f.Usage)
				return
			}
			if !strings.Contains(out, "--"+f.Name+" "+name+" ") {
				t.Errorf("hutch %s --help has no line \"--%s %s\":\n%s", strings.Join(path, " "), f.Name, name, out)
			}
		}
		cmd.LocalFlags().VisitAll(check)
		cmd.InheritedFlags().VisitAll(check)
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk((&app{getenv: func(string) string { return "" }}).rootCmd())
}
