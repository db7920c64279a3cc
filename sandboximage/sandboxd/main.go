// Command sandboxd serves the sandbox tools (read, grep, glob, list, bash, …)
// over HTTP for the runner, or runs one of them from the command line:
//
//	sandboxd call [--workdir DIR] [--agent DIR] [--data DIR] [--workspace DIR] [--timeout SECONDS] [--user UID[:GID]] [--env NAME]... [--local] TOOL 'JSON'
//	sandboxd serve --listen ADDR [same root flags] [--idle-timeout D] [--tls-from-token | --tls-cert F --tls-key F | --plain-http] [--print-addr]
//	sandboxd health [--addr HOST:PORT]
//
// The logic is in package shared/sandbox/server.
package main

import (
	"os"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
)

func main() {
	os.Exit(server.Main(os.Args[1:], server.Defaults{
		Listen:     sandboximage.ListenAddr,
		HealthAddr: sandboximage.HealthAddr,
	}, os.Stdout, os.Stderr))
}
