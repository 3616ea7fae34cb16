// Command api is the Lambda function behind API Gateway: admission and status.
package main

import (
	"time"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

func main() {
	fn := config.MustFunction("longrun-api")
	gen := ids.New()
	types := fn.Registry() // one registry for admission and discovery
	handler := &httpapi.Handler{
		Types: types,
		Admission: &admission.Service{Store: fn.Store, Registry: types, Now: time.Now, NewID: gen.Operation,
			Window: fn.Config.Window, Quota: fn.Config.Quota, PrincipalQuota: fn.Config.PrincipalQuota},
		Operations:   fn.Store,
		Intents:      &intent.Service{Store: fn.Store, Now: time.Now},
		Callers:      httpapi.Callers{CognitoClientIDs: fn.Config.CognitoClientIDs, OperatorPrincipals: fn.Config.OperatorPrincipals},
		NewRequestID: gen.Request,
		Log:          fn.Log,
		Metrics:      fn.Metrics,
		Tracer:       fn.Tracer(),
		Now:          time.Now,
		Console:      fn.Console(), // the operations console at /console/ (docs/console.md)
	}
	if fn.Config.SealSecret != "" {
		// Callback URLs' tokens are MACs under the seal key (internal/core/callback).
		handler.CallbackKey = fn.Sealer()
	}
	fn.Start(handler.Handle)
}
