package render

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// errSchemaRef is why a values schema may not name another document:
// Helm's own validation fetches http(s) URLs and reads files of the
// machine it runs on (file:///...), which for the guard is a committer
// reaching the network and the guard's disk.
var errSchemaRef = errors.New("a values schema may refer only to itself (\"$ref\": \"#/...\"): other files and URLs are not loaded")

// schemaLoader loads no document: every $ref or $id outside the schema
// itself fails with errSchemaRef. The JSON Schema meta-schemas are built
// into the validator and need no loader.
type schemaLoader struct{}

func (schemaLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		// As Helm: an unresolved URN is a schema that accepts anything.
		return true, nil
	}
	return nil, errSchemaRef
}

// validateValuesSchemas checks the values of chrt, and of each of its
// subcharts that has values, against the chart's values.schema.json, as
// helm's chartutil.ValidateAgainstSchema does, but loading no other
// document. A schema that names another document is a *RenderError
// naming the schema file and the reference; values the schemas refuse are
// one error naming Chart.yaml, with Helm's words.
func validateValuesSchemas(dir string, chrt *chart.Chart, values map[string]any) error {
	var sb strings.Builder
	if err := validateSchemaTree(dir, chrt, values, &sb); err != nil {
		return err
	}
	if sb.Len() > 0 {
		return &RenderError{Path: path.Join(dir, chartFile), Err: fmt.Errorf("values: values don't meet the specifications of the schema(s) in the following chart(s):\n%s", sb.String())}
	}
	return nil
}

func validateSchemaTree(dir string, chrt *chart.Chart, values map[string]any, sb *strings.Builder) error {
	if chrt.Schema != nil {
		file := chartPath(dir, chrt.ChartFullPath()+"/values.schema.json")
		if err := validateSchema(file, chrt.Schema, values); err != nil {
			var re *RenderError
			if errors.As(err, &re) {
				return err
			}
			fmt.Fprintf(sb, "%s:\n%s", chrt.Name(), err.Error())
		}
	}
	for _, sub := range chrt.Dependencies() {
		raw, ok := values[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateSchemaTree(dir, sub, subValues, sb); err != nil {
			return err
		}
	}
	return nil
}

// validateSchema validates values against one schema (file is its
// repository path). A schema that does not compile is a *RenderError
// naming it; values it refuses are a plain error, Helm's message.
func validateSchema(file string, schema []byte, values map[string]any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &RenderError{Path: file, Err: fmt.Errorf("unable to validate schema: %v", v)}
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return &RenderError{Path: file, Err: err}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(schemaLoader{})
	const self = "file:///values.schema.json"
	if err := c.AddResource(self, doc); err != nil {
		return &RenderError{Path: file, Err: err}
	}
	sch, err := c.Compile(self)
	if err != nil {
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) {
			return &RenderError{Path: file, Err: fmt.Errorf("%q is not loaded: %w", le.URL, errSchemaRef)}
		}
		return &RenderError{Path: file, Err: err}
	}
	if err := sch.Validate(values); err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonschema validation failed with '"+self+"#'\n")
		return errors.New(msg + "\n")
	}
	return nil
}
