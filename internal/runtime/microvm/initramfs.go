package microvm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// initramfsFormat changes whenever the initramfs's layout does, so that
// cached ones of an older layout are not used.
const initramfsFormat = "hutch-initramfs-1"

// initramfsInputs are what an initramfs is made of.
type initramfsInputs struct {
	agent   string   // hutch-agent binary, becomes /init
	modules []string // kernel module files, loaded in this order
	ca      string   // hutch's egress CA (PEM) or "": vmspec.EgressCAPath
}

// key is the hash of the inputs' contents: the cached initramfs's name.
func (in initramfsInputs) key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", initramfsFormat)
	files := append([]string{in.agent}, in.modules...)
	if in.ca != "" {
		files = append(files, in.ca)
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", filepath.Base(p))
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// buildInitramfs returns the initramfs of in from cacheDir, writing it
// there first if it is not yet: an uncompressed newc cpio whose /init is
// the agent, with the modules in vmspec.ModulesDir and the egress CA, if
// any, at vmspec.EgressCAPath.
func buildInitramfs(cacheDir string, in initramfsInputs) (string, error) {
	key, err := in.key()
	if err != nil {
		return "", fmt.Errorf("hashing the initramfs's inputs: %w", err)
	}
	out := filepath.Join(cacheDir, key+".cpio")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	var buf bytes.Buffer
	if err := writeInitramfs(&buf, in); err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return "", err
	}
	if err := writeFileAtomic(out, buf.Bytes()); err != nil {
		return "", fmt.Errorf("writing the initramfs: %w", err)
	}
	return out, nil
}

// writeInitramfs writes the initramfs of in to w.
func writeInitramfs(w io.Writer, in initramfsInputs) error {
	c := &newcWriter{w: w}
	modDir := strings.TrimPrefix(vmspec.ModulesDir, "/")
	for _, d := range []string{"dev", "proc", "sys", "mnt", "lib", "lib/modules", modDir} {
		c.dir(d, 0o755)
	}
	// The kernel opens /dev/console for init's stdio before anything is
	// mounted: the initramfs must have the node.
	c.char("dev/console", 0o600, 5, 1)
	agent, err := os.ReadFile(in.agent)
	if err != nil {
		return fmt.Errorf("reading the agent: %w", err)
	}
	c.file(strings.TrimPrefix(vmspec.InitPath, "/"), 0o755, agent)
	for i, m := range in.modules {
		b, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("reading kernel module: %w", err)
		}
		c.file(path.Join(modDir, fmt.Sprintf("%02d-%s", i, filepath.Base(m))), 0o644, b)
	}
	if in.ca != "" {
		ca, err := os.ReadFile(in.ca)
		if err != nil {
			return fmt.Errorf("reading the egress CA: %w", err)
		}
		c.file(strings.TrimPrefix(vmspec.EgressCAPath, "/"), 0o644, ca)
	}
	return c.close()
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it there, so that a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
