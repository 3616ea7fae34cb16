// Command cdk is the team's CDK app: longrun with provision.environment and its worker,
// deployed through longrun's construct, and the subscriber on longrun's bus; with the
// context catalogUrl, also register.environment and its TypeScript worker (registrar/).
// Build the functions first (see README.md), then `make deploy PROVISIONER_URL=https://…`
// (with `make registrar` and CATALOG_URL=https://… for the registrar), which runs the CDK
// CLI that cli/package-lock.json pins.
package main

import (
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	wd, err := os.Getwd() // the example's folder: cdk.json runs the app from there
	if err != nil {
		panic(err)
	}
	NewStack(app, "ProvisionEnvironment", fromContext(app, wd))
	app.Synth(nil)
}
