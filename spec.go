// Package contenteval holds the API contract, openapi.yaml, for the server to
// serve byte for byte at /openapi.yaml.
package contenteval

import _ "embed"

// OpenAPIYAML is openapi.yaml as committed.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
