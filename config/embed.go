// Package config embeds the generated CustomResourceDefinitions, for the
// guard's development cluster and its tests; the chart ships the same files.
package config

import "embed"

// CRDs holds crd/*.yaml.
//
//go:embed crd/*.yaml
var CRDs embed.FS
