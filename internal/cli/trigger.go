package cli

// `hutch trigger`: call any function of the daemon's table by id, the way
// `iii trigger` does (seed 001).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

func (a *app) triggerCmd() *cobra.Command {
	var base string
	cmd := &cobra.Command{
		Use:   "trigger FUNCTION_ID [KEY=VALUE ...]",
		Short: "Call a function by id and print its result as JSON",
		Long: `Call a function of the daemon (sandbox::run, sandbox::create, sandbox::exec,
sandbox::fs::write, ...) through POST /v1/functions/{id} and print the result
as JSON on stdout.

Each KEY=VALUE sets a payload field: the value is taken as JSON when it parses
(numbers, true/false, arrays, objects, null), else as a string. --json gives a
whole payload object; KEY=VALUE pairs are merged over it. An error prints the
error envelope as JSON on stderr and exits 1.`,
		Example: `  hutch trigger sandbox::run image=python lang=python code='print(2+2)' | jq -r .stdout
  SB=$(hutch trigger sandbox::create image=python | jq -r .sandbox_id)
  hutch trigger sandbox::exec sandbox_id=$SB cmd='python3 --version'
  hutch trigger sandbox::create --json '{"image":"python","env":{"LANG":"C.UTF-8"}}'`,
		Args: cobra.MinimumNArgs(1),
	}
	cmd.Flags().StringVar(&base, "json", "", "the payload as a JSON object; KEY=VALUE pairs override its fields")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		payload, err := triggerPayload(base, args[1:])
		if err != nil {
			return err
		}
		var out json.RawMessage
		err = a.client().Call(cmd.Context(), args[0], payload, &out)
		var env *api.ErrorEnvelope
		if errors.As(err, &env) {
			b, _ := json.Marshal(env)
			fmt.Fprintf(a.stderr, "%s\n", b)
			return &exitError{code: exitFailure}
		}
		if err != nil {
			return err
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(out)
		}
		pretty.WriteByte('\n')
		_, err = a.stdout.Write(pretty.Bytes())
		return err
	})
	return cmd
}

// triggerPayload builds the payload object from --json and KEY=VALUE pairs.
func triggerPayload(base string, pairs []string) (map[string]any, error) {
	payload := map[string]any{}
	if strings.TrimSpace(base) != "" {
		obj, ok := decodeJSON(base).(map[string]any)
		if !ok {
			return nil, usagef("--json must be a JSON object, got %.64q", base)
		}
		payload = obj
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("argument %q is not KEY=VALUE", kv)
		}
		if d := decodeJSON(v); d != nil || v == "null" {
			payload[k] = d
		} else {
			payload[k] = v
		}
	}
	return payload, nil
}

// decodeJSON returns s decoded when it is exactly one JSON value (numbers
// kept exact), else nil.
func decodeJSON(s string) any {
	if !json.Valid([]byte(s)) {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var out any
	if dec.Decode(&out) != nil {
		return nil
	}
	return out
}
