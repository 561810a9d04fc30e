package cli

import "golang.org/x/sys/unix"

// isTerminal reports whether stream is an open terminal (a *os.File whose
// descriptor answers TCGETS).
func isTerminal(stream any) bool {
	f, ok := stream.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
