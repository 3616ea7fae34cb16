// Command infra is longrun's AWS CDK app (cdk.json runs it). `make synth` synthesizes it
// offline; `make deploy STAGE=…` deploys it.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/infra/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(env("CDK_OUTDIR", "cdk.out"))})
	props, err := stack.FromContext(app)
	if err != nil {
		fail(err)
	}
	// The CDK CLI sets these from the credentials it deploys with; offline synthesis leaves
	// the stack environment-agnostic.
	if account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION"); account != "" && region != "" {
		props.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	if _, err := os.Stat(props.CodeDir + "/api.zip"); err != nil {
		fail(fmt.Errorf("%s/api.zip is missing: run `make build` first", props.CodeDir))
	}
	if err := stack.CheckCode(props.CodeDir, props.Architecture); err != nil {
		fail(err)
	}
	stack.New(app, "longrun-"+props.Stage, props)
	app.Synth(nil)
}

// fail stops the app before synthesis (os.Exit skips main's deferred jsii.Close).
func fail(err error) {
	fmt.Fprintln(os.Stderr, "infra:", err)
	jsii.Close()
	os.Exit(1)
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
