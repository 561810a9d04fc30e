package gvisor

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// runscLogName is the file in a bundle that runsc's --log points to. Without
// --debug runsc writes only fatal errors there, and it is the one place
// where errors of the gofer and the sandbox (whose stderr is /dev/null)
// appear: "error setting up FS: opening /x/hutch-agent: ... no such file".
const runscLogName = "runsc.log"

// maxRunscLog bounds how much of runsc.log is read.
const maxRunscLog = 64 << 10

// runscLogErrors returns the messages in a runsc --log file, oldest first.
// runsc writes JSON records ({"msg":..., "level":...}) back to back; a file
// in another format is returned as its lines.
func runscLogErrors(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRunscLog))
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var msgs []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var rec struct {
			Msg string `json:"msg"`
		}
		if err := dec.Decode(&rec); err == io.EOF {
			return msgs
		} else if err != nil {
			break
		}
		if m := strings.TrimSpace(rec.Msg); m != "" {
			msgs = append(msgs, m)
		}
	}
	msgs = msgs[:0]
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			msgs = append(msgs, l)
		}
	}
	return msgs
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
