//go:build tools

// Package tools pins the Argo CD command (github.com/argoproj/argo-cd/v3/cmd, one `argocd`
// binary that serves every component through ARGOCD_BINARY_NAME) as a dependency of this
// wrapper module, so hack/build-argocd.sh can `go build` it from the Go module proxy with the
// `replace` lines argo-cd's own go.mod needs (a dependency's replace lines do not apply).
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
