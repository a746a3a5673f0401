package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// AgeKeySuffix marks the keys of a decryption Secret that hold age keys.
const AgeKeySuffix = ".agekey"

// RenderOptions reads how a Guard's path is rendered: the variables of
// spec.vars and spec.varsFrom, the Helm settings (the release is named
// after the Guard unless spec.helm.releaseName says otherwise), and the age
// keys of spec.decryption. Errors name the field, object and key at fault,
// never a value. It is RenderOptionsIn without a cluster: values of
// spec.helm.valuesFrom are read with c, charts see Helm's default
// capabilities.
func RenderOptions(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (render.RenderOptions, error) {
	return RenderOptionsIn(ctx, c, g, defaultNamespace, RenderCluster{})
}

// RenderOptionsIn is RenderOptions with what rc reads from the cluster:
// the values of spec.helm.valuesFrom, read from defaultNamespace (the
// guard's own) with rc.Values, and the cluster's capabilities.
func RenderOptionsIn(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string, rc RenderCluster) (render.RenderOptions, error) {
	var opts render.RenderOptions
	vars, fromSecrets, err := Vars(ctx, c, g, defaultNamespace)
	if err != nil {
		return opts, err
	}
	opts.Vars, opts.SecretVars = vars, fromSecrets
	opts.Helm.ReleaseName = g.Name
	if h := g.Spec.Helm; h != nil {
		if h.ReleaseName != "" {
			opts.Helm.ReleaseName = h.ReleaseName
		}
		opts.Helm.Namespace = h.Namespace
		opts.Helm.ValuesFiles = h.ValuesFiles
		if h.Values != nil {
			opts.Helm.Values = h.Values.Raw
		}
		values := rc.Values
		if values == nil {
			values = c
		}
		if opts.Helm.ValuesFrom, err = HelmValuesFrom(ctx, values, g, defaultNamespace); err != nil {
			return opts, err
		}
		opts.Helm.PostRenderers = helmPostRenderers(h)
	}
	if cc := rc.Capabilities; cc != nil {
		// Asked only when a chart is rendered (a render, or the check
		// that a cached one still holds), not for every Guard.
		opts.Helm.CapabilitiesFrom = func() (*render.Capabilities, error) { return cc.Get(ctx) }
	}
	if d := g.Spec.Decryption; d != nil {
		if d.Provider != "" && d.Provider != "sops" {
			return opts, fmt.Errorf("spec.decryption.provider %q is not supported, only sops", d.Provider)
		}
		data, err := secretData(ctx, c, d.SecretRef, defaultNamespace)
		if err != nil {
			return opts, fmt.Errorf("spec.decryption.secretRef: %w", err)
		}
		if opts.AgeKeys, err = AgeKeys(data); err != nil {
			return opts, fmt.Errorf("spec.decryption.secretRef %s: %w", secretName(d.SecretRef, defaultNamespace), err)
		}
	}
	return opts, nil
}

// AgeKeys returns the values of the keys ending in .agekey, sorted by key,
// checking each is an age identity.
func AgeKeys(data map[string][]byte) ([]string, error) {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if !strings.HasSuffix(k, AgeKeySuffix) {
			continue
		}
		if err := render.CheckAgeKey(string(data[k])); err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		out = append(out, string(data[k]))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no key ending in %s", AgeKeySuffix)
	}
	return out, nil
}

// Vars returns the substitution variables of a Guard: the data of the
// ConfigMaps and Secrets of spec.varsFrom in order (later entries win),
// then spec.vars over all. It returns nil, turning substitution off, when
// the Guard names neither. fromSecrets names, sorted, the variables whose
// value comes from a Secret: the render marks their values sensitive.
func Vars(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (vars map[string]string, fromSecrets []string, err error) {
	if g.Spec.Vars == nil && len(g.Spec.VarsFrom) == 0 {
		return nil, nil, nil
	}
	vars = map[string]string{}
	secret := map[string]bool{}
	for i, ref := range g.Spec.VarsFrom {
		field := fmt.Sprintf("spec.varsFrom[%d]", i)
		ns := ref.Namespace
		if ns == "" {
			ns = defaultNamespace
		}
		key := types.NamespacedName{Namespace: ns, Name: ref.Name}
		var data map[string]string
		switch ref.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			err := c.Get(ctx, key, &cm)
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: configmap %s: %w", field, key, err)
			}
			data = cm.Data
		case "Secret":
			var s corev1.Secret
			err := c.Get(ctx, key, &s)
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: secret %s: %w", field, key, err)
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			return nil, nil, fmt.Errorf("%s.kind %q is not ConfigMap or Secret", field, ref.Kind)
		}
		for k, v := range data {
			if err := render.CheckVarName(k); err != nil {
				return nil, nil, fmt.Errorf("%s: %s %s: key %w", field, strings.ToLower(ref.Kind), key, err)
			}
			vars[k], secret[k] = v, ref.Kind == "Secret"
		}
	}
	for k, v := range g.Spec.Vars {
		if err := render.CheckVarName(k); err != nil {
			return nil, nil, fmt.Errorf("spec.vars: %w", err)
		}
		vars[k], secret[k] = v, false
	}
	for k, s := range secret {
		if s {
			fromSecrets = append(fromSecrets, k)
		}
	}
	slices.Sort(fromSecrets)
	return vars, fromSecrets, nil
}
