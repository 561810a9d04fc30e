package agent

// issue 40: a file's user metadata (E2B envd 0.6.2), kept as user.e2b.*
// extended attributes of the file.

import (
	"bytes"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// xattrNameMax is Linux's longest extended attribute name (XATTR_NAME_MAX).
const xattrNameMax = 255

// checkMetadata refuses metadata beyond the limits or whose key or value
// cannot be an extended attribute: a key is non-empty printable ASCII
// without '/', a value printable ASCII.
func checkMetadata(p string, md map[string]string) error {
	if len(md) > agentv1.MaxFsMetadataKeys {
		return fault(kindInvalid, p, "write %s: %d metadata keys, at most %d", p, len(md), agentv1.MaxFsMetadataKeys)
	}
	total := 0
	for k, v := range md {
		total += len(k) + len(v)
		if k == "" || len(agentv1.FsMetadataXattrPrefix)+len(k) > xattrNameMax || !printable(k) || strings.ContainsAny(k, " /") {
			return fault(kindInvalid, p, "write %s: bad metadata key %q", p, safeString(k))
		}
		if !printable(v) {
			return fault(kindInvalid, p, "write %s: metadata value of %q is not printable ASCII", p, k)
		}
	}
	if total > agentv1.MaxFsMetadataBytes {
		return fault(kindInvalid, p, "write %s: metadata of %d bytes, at most %d", p, total, agentv1.MaxFsMetadataBytes)
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// setMetadata sets md on the open file fd.
func setMetadata(fd int, md map[string]string) error {
	for k, v := range md {
		if err := unix.Fsetxattr(fd, agentv1.FsMetadataXattrPrefix+k, []byte(v), 0); err != nil {
			return err
		}
	}
	return nil
}

// readMetadata returns the user metadata of p itself (a symlink's own,
// which Linux does not allow: none), nil when it has none or its
// filesystem keeps no extended attributes. What the sandbox put there is
// bounded as a write is: keys past the limits are left out.
func readMetadata(p string) map[string]string {
	names := make([]byte, 4096)
	n, err := unix.Llistxattr(p, names)
	if errors.Is(err, unix.ERANGE) {
		names = make([]byte, 64<<10) // XATTR_LIST_MAX
		n, err = unix.Llistxattr(p, names)
	}
	if err != nil || n <= 0 {
		return nil
	}
	var md map[string]string
	total := 0
	val := make([]byte, agentv1.MaxFsMetadataBytes)
	for _, name := range bytes.Split(names[:n], []byte{0}) {
		key, ok := strings.CutPrefix(string(name), agentv1.FsMetadataXattrPrefix)
		if !ok || key == "" || !printable(key) || len(md) == agentv1.MaxFsMetadataKeys {
			continue
		}
		m, err := unix.Lgetxattr(p, string(name), val)
		if err != nil || !printable(string(val[:m])) || total+len(key)+m > agentv1.MaxFsMetadataBytes {
			continue
		}
		if md == nil {
			md = make(map[string]string)
		}
		md[key] = string(val[:m])
		total += len(key) + m
	}
	return md
}
