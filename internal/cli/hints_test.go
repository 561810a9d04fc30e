package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestHintsNameCLICommands checks that an error's hint names the CLI's
// command where the daemon's names a function id, and that every command
// the CLI names exists.
func TestHintsNameCLICommands(t *testing.T) {
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeProcessNotFound, "no process 7").
			WithFix(nil, "sandbox::process::list shows the sandbox's processes; sandbox::git::add stages; sandbox::nosuch stays")
	}}
	_, errOut, _ := newHarness(t, fake).run("", "exec", id, "--", "true")
	want := "hutch: hint: 'hutch ps' shows the sandbox's processes; 'hutch git ID add' stages; sandbox::nosuch stays\n"
	if !strings.HasSuffix(errOut, want) {
		t.Errorf("stderr %q, want it to end with %q", errOut, want)
	}

	root := (&app{getenv: func(string) string { return "" }}).rootCmd()
	for fn, c := range cliCommands {
		words := strings.Fields(c)
		var path []string
		for _, w := range words {
			if !strings.HasPrefix(w, "-") {
				path = append(path, w)
			}
		}
		cmd, rest, err := root.Find(path)
		if err != nil || len(rest) != 0 || cmd.CommandPath() != "hutch "+strings.Join(path, " ") {
			t.Errorf("%s: 'hutch %s' is no command (found %v, rest %q, %v)", fn, c, cmd.CommandPath(), rest, err)
			continue
		}
		for _, w := range words {
			if strings.HasPrefix(w, "-") && cmd.Flags().ShorthandLookup(strings.TrimPrefix(w, "-")) == nil {
				t.Errorf("%s: 'hutch %s' has no flag %s", fn, c, w)
			}
		}
	}
}
