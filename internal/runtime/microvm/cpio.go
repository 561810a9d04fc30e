package microvm

import (
	"fmt"
	"io"
)

// newcWriter writes a cpio archive in the "newc" format, the one the Linux
// kernel unpacks as an initramfs. It writes what an initramfs needs
// (directories, regular files, character devices) and nothing else; no
// cpio module is in this project's dependencies, and the format is a
// fixed header of hexadecimal fields.
type newcWriter struct {
	w   io.Writer
	ino uint32
	err error
}

// cpio mode bits (the file type is in the high bits, as in stat).
const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioChar = 0o020000
)

// dir adds a directory.
func (c *newcWriter) dir(name string, perm uint32) { c.entry(name, cpioDir|perm, 0, 0, nil) }

// file adds a regular file with its content.
func (c *newcWriter) file(name string, perm uint32, data []byte) {
	c.entry(name, cpioFile|perm, 0, 0, data)
}

// char adds a character device node.
func (c *newcWriter) char(name string, perm, major, minor uint32) {
	c.entry(name, cpioChar|perm, major, minor, nil)
}

// close writes the trailer and returns the first error.
func (c *newcWriter) close() error {
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	return c.err
}

// entry writes one header, its name and its data, each padded to four
// bytes. Everything is owned by root, with mtime 0, so that the same
// inputs make the same bytes.
func (c *newcWriter) entry(name string, mode, rmajor, rminor uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := uint32(1)
	if mode&cpioDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *newcWriter) write(b []byte) {
	if c.err == nil && len(b) > 0 {
		_, c.err = c.w.Write(b)
	}
}

// pad writes the zeros that bring n bytes to a multiple of four.
func (c *newcWriter) pad(n int) { c.write(make([]byte, (4-n%4)%4)) }
