package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

func Example() {
	daemon := standInDaemon() // a real one is `hutch serve`
	defer daemon.Close()

	ctx := context.Background()
	c := client.New(daemon.URL, "") // or client.FromEnv()

	sb, err := c.Create(ctx, api.CreateRequest{Image: "python"})
	if err != nil {
		var env *api.ErrorEnvelope
		if errors.As(err, &env) {
			log.Fatalf("daemon said %s: %s (%s)", env.Code, env.Message, env.FixNote)
		}
		log.Fatal(err) // client.IsUnreachable(err): no daemon running
	}
	defer c.Stop(context.WithoutCancel(ctx), sb.SandboxID, false)

	res, err := c.Exec(ctx, api.ExecRequest{SandboxID: sb.SandboxID, Cmd: "python3", Args: []string{"-c", "print(2+2)"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exit %d, stdout %q", *res.ExitCode, res.Stdout)
	// Output: exit 0, stdout "4\n"
}

// standInDaemon serves the API over a fake manager whose exec prints 4.
func standInDaemon() *httptest.Server {
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		zero := 0
		return api.ExecResponse{Stdout: "4\n", ExitCode: &zero, Success: true}, nil
	}}
	return httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{}))
}
