// Package cost is the cost model behind `make cost` (cmd/cost): it records what a run of the
// local stack asks of AWS at the stack's edge (Lambda invocations and their durations, the
// recorder's decisions, EventBridge entries, SQS messages, DynamoDB request units through
// internal/local/ddbmeter) and the functions' log bytes, and prices one operation's share at
// the us-east-1 list prices of one dated file. docs/cost.md says what is counted and how.
package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed prices.us-east-1.json
var pricesFile []byte

// PricesFile names the embedded price list, for reports.
const PricesFile = "internal/local/cost/prices.us-east-1.json"

// Price is one list price.
type Price struct {
	USD    float64 `json:"usd"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"`
}

// Prices are the list prices the model multiplies by.
type Prices struct {
	AsOf   string `json:"asOf"`
	Region string `json:"region"`
	Note   string `json:"note"`
	Prices struct {
		Transition      Price `json:"stepFunctionsStandardTransition"`
		WriteUnit       Price `json:"dynamodbWriteRequestUnit"`
		ReadUnit        Price `json:"dynamodbReadRequestUnit"`
		APIRequest      Price `json:"apiGatewayRestRequest"`
		LambdaRequest   Price `json:"lambdaRequest"`
		LambdaGBSecond  Price `json:"lambdaArmGBSecond"`
		Event           Price `json:"eventBridgeCustomEvent"`
		SQSRequest      Price `json:"sqsStandardRequest"`
		LogsIngestedGB  Price `json:"cloudWatchLogsIngestedGB"`
		XRayTraceRecord Price `json:"xrayTraceRecorded"`
	} `json:"prices"`
}

// ListPrices returns the embedded price list.
func ListPrices() (Prices, error) {
	var p Prices
	if err := json.Unmarshal(pricesFile, &p); err != nil {
		return p, fmt.Errorf("cost: %s: %w", PricesFile, err)
	}
	for name, pr := range p.all() {
		if pr.USD <= 0 || pr.Source == "" || pr.Unit == "" {
			return p, fmt.Errorf("cost: %s: %s needs a price, a unit and a source", PricesFile, name)
		}
	}
	if p.AsOf == "" || p.Region == "" {
		return p, fmt.Errorf("cost: %s: the date (asOf) and the region are required", PricesFile)
	}
	return p, nil
}

func (p Prices) all() map[string]Price {
	q := p.Prices
	return map[string]Price{"stepFunctionsStandardTransition": q.Transition, "dynamodbWriteRequestUnit": q.WriteUnit,
		"dynamodbReadRequestUnit": q.ReadUnit, "apiGatewayRestRequest": q.APIRequest, "lambdaRequest": q.LambdaRequest,
		"lambdaArmGBSecond": q.LambdaGBSecond, "eventBridgeCustomEvent": q.Event, "sqsStandardRequest": q.SQSRequest,
		"cloudWatchLogsIngestedGB": q.LogsIngestedGB, "xrayTraceRecorded": q.XRayTraceRecord}
}
