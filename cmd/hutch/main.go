// Command hutch is the hutch daemon (`hutch serve`) and its command line client.
package main

import (
	"os"

	"github.com/hutch-dev/hutch/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
