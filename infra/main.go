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
	stage := context(app, "stage", "dev")
	props := &stack.Props{
		Stage:              stage,
		CodeDir:            context(app, "codeDir", "dist"),
		CognitoUserPoolArn: context(app, "cognitoUserPoolArn", ""),
		X86:                context(app, "architecture", "arm64") == "x86_64",
	}
	// The CDK CLI sets these from the credentials it deploys with; offline synthesis leaves
	// the stack environment-agnostic.
	if account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION"); account != "" && region != "" {
		props.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	if _, err := os.Stat(props.CodeDir + "/api.zip"); err != nil {
		fmt.Fprintf(os.Stderr, "infra: %s/api.zip is missing: run `make build` first\n", props.CodeDir)
		os.Exit(1)
	}
	stack.New(app, "longrun-"+stage, props)
	app.Synth(nil)
}

func context(app awscdk.App, key, def string) string {
	if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
		return v
	}
	return def
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
