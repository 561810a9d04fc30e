package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrBinaryNotFound is the error of a FindBinary that found nothing.
var ErrBinaryNotFound = errors.New("not found next to the hutch binary or on PATH")

// FindBinary resolves a helper binary (hutch-agent, runsc) to an absolute
// path: explicit if given, else name next to the running executable, else
// name on PATH. It checks that the file is an executable regular file.
func FindBinary(explicit, name string) (string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if err := checkExecutable(abs); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return abs, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("%s %w", name, ErrBinaryNotFound)
}

// checkExecutable says why path is not an executable regular file.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
