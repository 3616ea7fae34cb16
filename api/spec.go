// Package api holds the public HTTP contract of longrun as an OpenAPI document.
package api

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document describing the public HTTP API
// (api/openapi.yaml). Every call returns a fresh copy, so callers may modify it.
func OpenAPI() []byte {
	return bytes.Clone(openAPI)
}
