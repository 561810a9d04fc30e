package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// defaultPath is searched when the request's environment has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Exit statuses of a command that could not be run, as shells use them.
const (
	exitNotExecutable = 126
	exitNotFound      = 127
)

// lookupError says why a command cannot be run; code is its exit status.
type lookupError struct {
	code   int32
	reason string
}

// lookPath finds the file to execute for cmd, like execvp: a cmd with a slash
// is taken as a path (relative ones from dir), any other is searched in the
// PATH of env. Relative PATH entries are relative to dir, where the child
// will run.
func lookPath(cmd string, env []string, dir string) (string, *lookupError) {
	if strings.Contains(cmd, "/") {
		file := cmd
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if err := checkExecutable(file); err != nil {
			return "", err
		}
		return file, nil
	}
	var denied *lookupError
	for _, d := range filepath.SplitList(pathOf(env)) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		file := filepath.Join(d, cmd)
		err := checkExecutable(file)
		if err == nil {
			return file, nil
		}
		if err.code == exitNotExecutable && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", &lookupError{code: exitNotFound, reason: "not found"}
}

// checkExecutable reports whether file is a file someone may execute. The
// final word is execve's, made as the user the child runs as.
func checkExecutable(file string) *lookupError {
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &lookupError{code: exitNotFound, reason: "not found"}
	case err != nil:
		return &lookupError{code: exitNotExecutable, reason: errnoText(err)}
	case fi.IsDir():
		return &lookupError{code: exitNotExecutable, reason: "is a directory"}
	case fi.Mode()&0o111 == 0:
		return &lookupError{code: exitNotExecutable, reason: "permission denied"}
	}
	return nil
}

// pathOf is the value of the last PATH in env, or defaultPath.
func pathOf(env []string) string {
	if v, ok := envValue(env, "PATH"); ok {
		return v
	}
	return defaultPath
}

// envValue is the value of key's last entry in env ("KEY=value").
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// errnoText is the bare system error text of err ("permission denied"),
// without the operation and path an *fs.PathError adds.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
