// Command worker is the provision.environment worker: a Lambda function speaking longrun's
// step protocol, written with github.com/longrun-dev/longrun/worker.
package main

import (
	"os"

	"github.com/longrun-dev/longrun/worker"

	"example.com/provision-environment/provisioner"
)

func main() {
	worker.Start(Steps(provisioner.Client{URL: os.Getenv("PROVISIONER_URL")}))
}
