package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RenderOptions say how a path is rendered beyond reading its files. The
// zero value renders plain YAML, Kustomize and Helm with their defaults,
// substitutes nothing and decrypts nothing.
type RenderOptions struct {
	// Vars are substituted for ${NAME} and ${NAME:=default} in every
	// rendered object. Nil turns substitution off, so that manifests
	// holding ${...} for another tool are left alone; an empty, non-nil map
	// turns it on (every ${NAME} without a default is then an error).
	Vars map[string]string `json:"vars,omitempty"`
	// SecretVars name the variables of Vars whose value comes from a
	// Secret (spec.varsFrom): their values are marked sensitive (see
	// Object.Sensitive) and never leave the process in clear.
	SecretVars []string `json:"secretVars,omitempty"`
	// Helm says how a path holding a Chart.yaml is rendered.
	Helm HelmOptions `json:"helm"`
	// AgeKeys are age identities (AGE-SECRET-KEY-1...), one or more per
	// string, that decrypt SOPS-encrypted files. Without keys a
	// SOPS-encrypted file is an error.
	AgeKeys []string `json:"-"`
	// Credentials are the secret parts of the source's credentials
	// (passwords, tokens, private keys): secret like the values a render
	// decrypts, so the render marks them sensitive too (see
	// Object.Sensitive). They enter Hash digested.
	Credentials []string `json:"-"`
	// Limits bound the render; zero fields take the process's limits
	// (SetLimits). They are not part of Hash: they do not change what a
	// render that succeeds produces.
	Limits Limits `json:"-"`
}

// HelmOptions are the settings of a Helm release rendered from Git.
type HelmOptions struct {
	// ReleaseName is .Release.Name; empty means "release".
	ReleaseName string `json:"releaseName,omitempty"`
	// Namespace is .Release.Namespace and the namespace of rendered objects
	// that name none; empty means "default".
	Namespace string `json:"namespace,omitempty"`
	// ValuesFiles are paths relative to the chart folder, merged in order
	// over the chart's values.yaml.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesFrom are values read from ConfigMaps and Secrets
	// (spec.helm.valuesFrom), merged in order over the values files and
	// under Values. Values from a Secret are marked sensitive.
	ValuesFrom []HelmValues `json:"-"`
	// Values is a JSON object merged last, over the values files and
	// ValuesFrom.
	Values json.RawMessage `json:"values,omitempty"`
	// Capabilities are the cluster's .Capabilities, fixed; nil asks
	// CapabilitiesFrom, and without it renders with Helm's defaults
	// (DefaultKubeVersion, every API version Helm knows).
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// CapabilitiesFrom, when Capabilities is nil, is asked for them when a
	// chart is rendered, and only then: they are not part of Hash, a
	// render that asked remembers what it got (RenderAsked), and a cached
	// render is used only while the answer is the same (Rendered.Current).
	// So a change of the cluster renders charts again, and nothing else.
	CapabilitiesFrom func() (*Capabilities, error) `json:"-"`
	// PostRenderers are Kustomize patches applied, in order, over the
	// objects of the chart's templates.
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`
}

// DefaultReleaseName is the Helm release name when none is given.
const DefaultReleaseName = "release"

func (h HelmOptions) releaseName() string {
	if h.ReleaseName == "" {
		return DefaultReleaseName
	}
	return h.ReleaseName
}

func (h HelmOptions) namespace() string {
	if h.Namespace == "" {
		return "default"
	}
	return h.Namespace
}

// substitute reports whether ${VAR} substitution is on.
func (o RenderOptions) substitute() bool { return o.Vars != nil }

// Hash identifies the options: two options with the same hash render a
// revision the same way. It is a hex SHA-256; the keys enter it hashed, so
// it reveals no secret.
func (o RenderOptions) Hash() string {
	h := sha256.New()
	// Maps marshal with sorted keys, so equal options hash equally.
	b, _ := json.Marshal(struct {
		Vars        map[string]string `json:"vars"`
		Substitute  bool              `json:"substitute"`
		ReleaseName string            `json:"releaseName"`
		Namespace   string            `json:"namespace"`
		ValuesFiles []string          `json:"valuesFiles"`
	}{o.Vars, o.substitute(), o.Helm.ReleaseName, o.Helm.Namespace, o.Helm.ValuesFiles})
	h.Write(b)
	h.Write([]byte{0})
	h.Write(o.Helm.Values)
	// Values from the cluster enter by digest (a Secret's among them),
	// with where they go and whether they are secret.
	for _, v := range o.Helm.ValuesFrom {
		d := sha256.Sum256(v.Data)
		h.Write([]byte{2})
		h.Write(d[:])
		h.Write([]byte(v.TargetPath))
		secret := byte(0)
		if v.Secret {
			secret = 1
		}
		h.Write([]byte{0, secret})
	}
	if o.Helm.Capabilities != nil || len(o.Helm.PostRenderers) > 0 {
		b, _ := json.Marshal(struct {
			Capabilities  *Capabilities  `json:"c"`
			PostRenderers []PostRenderer `json:"p"`
		}{o.Helm.Capabilities, o.Helm.PostRenderers})
		h.Write([]byte{3})
		h.Write(b)
	}
	secretVars := slices.Clone(o.SecretVars)
	slices.Sort(secretVars)
	for _, v := range secretVars {
		h.Write([]byte{1})
		h.Write([]byte(v))
	}
	keys := slices.Concat(o.AgeKeys, o.Credentials)
	slices.Sort(keys)
	for _, k := range keys {
		s := sha256.Sum256([]byte(k))
		h.Write([]byte{0})
		h.Write(s[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// String describes the options without a value: variable names, the Helm
// settings, the number of age keys (variables may come from Secrets).
func (o RenderOptions) String() string {
	vars := "off"
	if o.substitute() {
		vars = "[" + strings.Join(slices.Sorted(maps.Keys(o.Vars)), " ") + "]"
	}
	kube := "default"
	if c := o.Helm.Capabilities; c != nil {
		kube = c.KubeVersion
	} else if o.Helm.CapabilitiesFrom != nil {
		kube = "the cluster's"
	}
	return fmt.Sprintf("{vars: %s, helm: {releaseName: %q, namespace: %q, valuesFiles: %q, valuesFrom: %d, values: %d bytes, kubeVersion: %s, postRenderers: %d}, ageKeys: %d}",
		vars, o.Helm.ReleaseName, o.Helm.Namespace, o.Helm.ValuesFiles, len(o.Helm.ValuesFrom), len(o.Helm.Values), kube, len(o.Helm.PostRenderers), len(o.AgeKeys))
}

// MarshalLog is what logr loggers print for the options: String.
func (o RenderOptions) MarshalLog() any { return o.String() }
