package local_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/local"
)

// A team's end-to-end test starts the stack with its types file, the worker that file's
// local section names, and the address of a fake the worker calls; then it drives the API
// as any client would. (Not run here: it builds and starts the whole stack, and it needs the
// types file's worker. examples/provision-environment/e2e_test.go runs this in CI.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stack, err := local.Start(ctx, local.Options{
		TypesFiles: []string{"longrun.types.yaml"},
		WorkerEnv:  map[string]string{"PROVISIONER_URL": "http://127.0.0.1:9999"},
	})
	if err != nil {
		panic(err)
	}
	defer stack.Close()

	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, stack.APIURL+"/v1/operations",
		strings.NewReader(`{"type":"provision.environment","input":{"project":"shop","environment":"qa-1","template":"small"}}`))
	req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "qa-1-first")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Location") != "", len(body) > 0)
	// Poll resp's Location until the operation is terminal …
}
