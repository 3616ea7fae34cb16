package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/callback"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// callback serves POST /v1/callbacks/{token}: a signal sent by a third party that holds a
// callback URL and no credentials. The token names the operation and the signal; the body
// is the signal's data. The same body twice answers the same and is delivered once (its
// hash is the idempotency key); another body is another delivery. The answer says nothing
// of the operation, and the token is never logged (only the operation id, once known).
func (h *Handler) callback(ctx context.Context, ev events.APIGatewayProxyRequest, token string) (response, error) {
	notFound := problem.New(problem.NotFound, "No such callback.")
	if h.CallbackKey == nil {
		return response{}, notFound
	}
	id, name, err := callback.Parse(h.CallbackKey, token)
	if err != nil {
		return response{}, notFound
	}
	logctx.Set(ctx, logctx.Fields{OperationID: id})
	data, decoded, err := signalData(ev)
	if err != nil {
		return response{}, err
	}
	sum := sha256.Sum256(data)
	_, replayed, err := h.Intents.Signal(ctx, h.Types, intent.SignalRequest{ID: id, Name: name, Data: data, Decoded: decoded,
		Key: "callback:" + base64.RawURLEncoding.EncodeToString(sum[:]), Sender: intent.Sender{Callback: true}})
	if err != nil {
		if pe := problem.As(err); pe.Code != problem.Internal && pe.Code != problem.Unavailable {
			// The third party is told what it can act on, never which operation it was.
			out := *pe
			out.OperationID = ""
			if out.Code == problem.NotFound {
				return response{}, notFound
			}
			return response{}, &out
		}
		return response{}, err
	}
	body, _ := json.Marshal(map[string]string{"signal": name})
	header := http.Header{"Content-Type": {"application/json"}}
	if replayed {
		header.Set("Idempotent-Replayed", "true")
	}
	return response{status: http.StatusAccepted, header: header, body: body}, nil
}
