// Command sbx is the sbx daemon (`sbx serve`) and its command line client.
package main

import (
	"os"

	"github.com/sbx-dev/sbx/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
