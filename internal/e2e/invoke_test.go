package e2e

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

func invokeInput(fn string, payload []byte) *lambda.InvokeInput {
	return &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload}
}
