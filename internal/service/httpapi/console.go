package httpapi

import (
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Console serves the operations console (internal/service/console): its static files under
// /console, answered before any caller is resolved, since they hold no data; the page reads
// everything it shows through this API with its user's own token.
type Console interface {
	Serve(method, path string) events.APIGatewayProxyResponse
}

// consolePath is where the console is served: /console and everything under /console/.
const consolePath = "/console"

func isConsolePath(path string) bool {
	return path == consolePath || strings.HasPrefix(path, consolePath+"/")
}

// console answers a console path: the console's own answer, or 404 when the function serves
// no console.
func (h *Handler) console(ev events.APIGatewayProxyRequest) (response, error) {
	if h.Console == nil {
		return response{}, errNoRoute(ev.HTTPMethod, ev.Path)
	}
	out := h.Console.Serve(ev.HTTPMethod, ev.Path)
	header := make(http.Header, len(out.Headers))
	for k, v := range out.Headers {
		header.Set(k, v)
	}
	return response{status: out.StatusCode, header: header, body: []byte(out.Body)}, nil
}
