// Package spec checks the requests of sandbox functions where the check
// needs no state of the core: ids, env, commands, workdirs, stdin, life
// terms and metadata (each failure is S001 naming the field); and it
// resolves the user a sandbox runs as over its image (user.go). The core
// (internal/sandbox) and the services beside it call it alike.
package spec

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"github.com/kballard/go-shellquote"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// ParseID checks that id is a UUID and returns its canonical form.
func ParseID(id string) (string, error) {
	if id == "" {
		return "", errdefs.Malformed("sandbox_id is required")
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", errdefs.Malformed("sandbox_id %q is not a UUID", Clip(id, 64))
	}
	return u.String(), nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateEnv checks that every entry is KEY=VALUE with a valid name.
// field names the payload field for the message ("env").
func ValidateEnv(field string, env []string) error {
	for i, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			return errdefs.Malformed("%s[%d] %q is not KEY=VALUE", field, i, Clip(kv, 64))
		}
		if !envName.MatchString(k) {
			return errdefs.Malformed("%s[%d]: %q is not a valid variable name (letters, digits and _, not starting with a digit)", field, i, Clip(k, 64))
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return errdefs.Malformed("%s[%d]: %s contains a NUL byte", field, i, k)
		}
	}
	return nil
}

// ValidateEnvKeys checks variable names.
func ValidateEnvKeys(keys []string) error {
	for i, k := range keys {
		if !envName.MatchString(k) {
			return errdefs.Malformed("keys[%d]: %q is not a valid variable name (letters, digits and _, not starting with a digit)", i, Clip(k, 64))
		}
	}
	return nil
}

// MergeEnv layers environments: later layers override earlier ones key by
// key; the result keeps first-seen key order.
func MergeEnv(layers ...[]string) []string {
	idx := map[string]int{}
	var out []string
	for _, layer := range layers {
		for _, kv := range layer {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := idx[k]; ok {
				out[i] = kv
				continue
			}
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// CommandArgv resolves the contract's command shapes into an argv: a
// non-empty argv wins (and may not be combined with cmd/args); a cmd with
// whitespace and no args is split shell-word style; cmd plus args is argv.
func CommandArgv(cmd string, args, argv []string) ([]string, error) {
	if len(argv) > 0 {
		if cmd != "" || len(args) > 0 {
			return nil, errdefs.Malformed("give either argv or cmd/args, not both")
		}
		if argv[0] == "" {
			return nil, errdefs.Malformed("argv[0] is empty")
		}
		return argv, nil
	}
	if strings.TrimSpace(cmd) == "" {
		return nil, errdefs.Malformed("cmd is required (the program to run; put its arguments in args)")
	}
	if strings.IndexFunc(cmd, unicode.IsSpace) >= 0 {
		if len(args) > 0 {
			return nil, errdefs.Malformed("cmd %q contains whitespace and args is set: put the program alone in cmd and every argument in args", Clip(cmd, 64)).
				WithFix(map[string]any{"argv": append(strings.Fields(cmd), args...)}, "or pass the whole command line as argv")
		}
		words, err := shellquote.Split(cmd)
		if err != nil {
			return nil, errdefs.Malformed("cmd %q cannot be split into words: %v", Clip(cmd, 64), err)
		}
		if len(words) == 0 {
			return nil, errdefs.Malformed("cmd is required")
		}
		return words, nil
	}
	return append([]string{cmd}, args...), nil
}

// DecodeStdin decodes the base64 stdin field; "" means no input.
func DecodeStdin(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errdefs.Malformed("stdin is not valid base64: %v", err)
	}
	return b, nil
}

// ValidateWorkdir checks that a workdir is absolute and clean enough; "~"
// alone or before "/sub" is the home of the command's user (api.WorkdirHome).
func ValidateWorkdir(dir string) error {
	if dir == "" {
		return nil
	}
	if !path.IsAbs(dir) && dir != api.WorkdirHome && !strings.HasPrefix(dir, api.WorkdirHome+"/") {
		return errdefs.Malformed("workdir %q must be an absolute path or start with ~/", Clip(dir, 64))
	}
	if strings.IndexByte(dir, 0) >= 0 {
		return errdefs.Malformed("workdir contains a NUL byte")
	}
	return nil
}

// Clip shortens s for quoting in an error message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s…", s[:n])
}
