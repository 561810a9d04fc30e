// Command testagent stands in for hutch-agent in the gvisor runtime's tests.
// It reads one command per line on stdin and answers one line on stdout:
//
//	echo X         → X
//	alloc N        → allocates and touches N MiB, then "ok N"
//	write P TEXT   → writes TEXT to file P, then "ok" (or "err: ...")
//	read P         → P's contents on one line (or "err: ...")
//	spawn N        → starts up to N "sleep 600" children, then "spawned K"
//	run CMD        → runs "sh -c CMD", then "exit N: OUTPUT"
//	hostname       → the host name
//	pid            → its own pid
//	exit           → exits with status 0
//
// Unknown commands answer "err: unknown command".
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

func main() {
	var held [][]byte // keeps allocations alive
	var children []*exec.Cmd
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "echo":
			fmt.Println(arg)
		case "alloc":
			n, err := strconv.Atoi(arg)
			if err != nil {
				fmt.Println("err:", err)
				continue
			}
			for i := 0; i < n; i++ {
				b := make([]byte, 1<<20)
				for j := 0; j < len(b); j += 4096 {
					b[j] = 1
				}
				held = append(held, b)
			}
			fmt.Println("ok", n)
		case "write":
			path, text, _ := strings.Cut(arg, " ")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				fmt.Println("err:", err)
				continue
			}
			fmt.Println("ok")
		case "read":
			b, err := os.ReadFile(arg)
			if err != nil {
				fmt.Println("err:", err)
				continue
			}
			fmt.Println(strings.ReplaceAll(string(b), "\n", " "))
		case "spawn":
			n, _ := strconv.Atoi(arg)
			k := 0
			for ; k < n; k++ {
				c := exec.Command("/bin/sleep", "600")
				if err := c.Start(); err != nil {
					break
				}
				children = append(children, c)
			}
			fmt.Println("spawned", k)
		case "run":
			c := exec.Command("/bin/sh", "-c", "exec "+arg)
			out, err := c.CombinedOutput()
			code := 0
			if err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
			fmt.Printf("exit %d: %s\n", code, strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", " "))
		case "hostname":
			h, err := os.Hostname()
			if err != nil {
				fmt.Println("err:", err)
				continue
			}
			fmt.Println(h)
		case "pid":
			fmt.Println(os.Getpid())
		case "exit":
			os.Exit(0)
		default:
			fmt.Println("err: unknown command")
		}
	}
	_ = held
}
