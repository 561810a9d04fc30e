package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NetworkTraces lists what the host holds of sandbox id's network: links
// whose alias names it and nftables lines that mention it.
func NetworkTraces(id string) []string {
	var found []string
	aliases, _ := filepath.Glob("/sys/class/net/*/ifalias")
	for _, a := range aliases {
		if b, err := os.ReadFile(a); err == nil && strings.Contains(string(b), id) {
			found = append(found, "link "+filepath.Base(filepath.Dir(a)))
		}
	}
	if out, err := exec.Command("nft", "list", "ruleset").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, id) {
				found = append(found, "nft: "+strings.TrimSpace(line))
			}
		}
	}
	return found
}
