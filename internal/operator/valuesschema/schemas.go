// Package valuesschema validates the values of an install or upgrade
// against the chart's values.schema.json as Helm's actions do, with each
// schema compiled once rather than at every action.
//
// Helm's install and upgrade validate the values they render with
// (chartutil.ToRenderValuesWithSchemaValidation, through
// chartutil.ValidateAgainstSchema) and compile the chart's schema, and
// each dependency's, anew every time: at N=1000 installs that was 8-10 %
// of the runtime's CPU (docs/benchmarks.md, "Release records and values
// schema: CPU per action"). Schemas keeps what the compiler builds,
// keyed by the schema's text, so that a chart's schema is compiled once
// however many releases, reconciles and copies of the chart use it.
//
// The judgement is Helm's, built from Helm's own steps: the values are
// the chart's defaults coalesced with the release's, after Helm's
// dependency processing (a dependency disabled by a condition or a tag is
// not validated, an alias is validated under its alias); the chart's
// schema judges them, each enabled dependency's its own part; the
// compiler has Helm's loaders (file, http, https, urn) and the schema
// Helm's URL, so that an error names the failing value in the very words
// Helm's does.
//
// What differs: a schema that refers to another by an http(s) or file
// URL reads it when the schema is first compiled, not at every action;
// a compilation that fails is not kept, so it is tried again.
package valuesschema

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// schemaURL is where Helm's compiler places a chart's schema; its errors
// name it.
const schemaURL = "file:///values.schema.json"

// DefaultMax is how many compiled schemas a Schemas built with max 0
// keeps: one a chart version and dependency of every kind, with room.
const DefaultMax = 64

// Schemas validates values against charts' schemas, compiling each schema
// once and keeping at most max of them, the least recently used dropped
// first. It is safe for concurrent use.
type Schemas struct {
	log logr.Logger
	max int

	mu       sync.Mutex
	compiled map[string]*compiled // by the schema's text
	uses     uint64               // the clock of lastUse
}

// compiled is one compiled schema.
type compiled struct {
	schema  *jsonschema.Schema
	lastUse uint64
}

// New returns an empty Schemas that keeps at most max compiled schemas
// (DefaultMax when max is 0). log receives the warning Helm's compiler
// prints: an urn: reference nothing resolves.
func New(max int, log logr.Logger) *Schemas {
	if max <= 0 {
		max = DefaultMax
	}
	return &Schemas{log: log, max: max, compiled: map[string]*compiled{}}
}

// CheckValues judges vals, the values an install or upgrade of chrt hands
// Helm, as that action does before it renders: nil when Helm's validation
// would pass, else an error (for values Helm refuses, the one its action
// returns). chrt is left as it is: the dependency processing runs on a copy of a
// chart with dependencies (the action's own processing of the chart it
// gets is not idempotent: a second pass drops import-values from the
// chart's metadata).
func (s *Schemas) CheckValues(chrt *chart.Chart, vals map[string]interface{}) error {
	if chrt == nil || chrt.Metadata == nil {
		return errors.New("no chart to check the values against")
	}
	if manifest.HasDependencies(chrt) {
		chrt = manifest.CopyChart(chrt)
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return err
	}
	coalesced, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		return err
	}
	if err := s.ValidateAgainstSchema(chrt, coalesced); err != nil {
		return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", err.Error())
	}
	return nil
}

// ValidateAgainstSchema is chartutil.ValidateAgainstSchema with each
// schema compiled once: values, a chart's coalesced values, against
// chrt's schema and each of its dependencies' against its part.
func (s *Schemas) ValidateAgainstSchema(chrt *chart.Chart, values map[string]interface{}) error {
	var sb strings.Builder
	if chrt.Schema != nil {
		if err := s.validate(values, chrt.Schema); err != nil {
			fmt.Fprintf(&sb, "%s:\n", chrt.Name())
			sb.WriteString(err.Error())
		}
	}
	for _, sub := range chrt.Dependencies() {
		raw, exists := values[sub.Name()]
		if !exists || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := s.ValidateAgainstSchema(sub, subValues); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

// validate is chartutil.ValidateAgainstSingleSchema with the schema
// compiled once.
func (s *Schemas) validate(values map[string]interface{}, schemaJSON []byte) (reterr error) {
	defer func() {
		if r := recover(); r != nil {
			reterr = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	schema, err := s.schema(schemaJSON)
	if err != nil {
		return err
	}
	if err := schema.Validate(values); err != nil {
		return validationError{err}
	}
	return nil
}

// validationError reads as chartutil.JSONSchemaValidationError.
type validationError struct{ err error }

func (e validationError) Error() string {
	return strings.TrimPrefix(e.err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n") + "\n"
}

// schema returns the compiled schemaJSON, compiling it the first time.
func (s *Schemas) schema(schemaJSON []byte) (*jsonschema.Schema, error) {
	s.mu.Lock()
	if c, ok := s.compiled[string(schemaJSON)]; ok {
		s.uses++
		c.lastUse = s.uses
		s.mu.Unlock()
		return c.schema, nil
	}
	s.mu.Unlock()

	// Two first uses at once both compile; either result serves.
	schema, err := s.compile(schemaJSON)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.compiled) >= s.max {
		s.dropLeastRecentlyUsed()
	}
	s.uses++
	s.compiled[string(schemaJSON)] = &compiled{schema: schema, lastUse: s.uses}
	return schema, nil
}

// dropLeastRecentlyUsed drops the schema used longest ago. s.mu is held.
func (s *Schemas) dropLeastRecentlyUsed() {
	var oldest string
	var oldestUse uint64
	first := true
	for key, c := range s.compiled {
		if first || c.lastUse < oldestUse {
			oldest, oldestUse, first = key, c.lastUse, false
		}
	}
	delete(s.compiled, oldest)
}

// compile compiles schemaJSON as Helm's ValidateAgainstSingleSchema does.
func (s *Schemas) compile(schemaJSON []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(jsonschema.SchemeURLLoader{
		"file":  jsonschema.FileLoader{},
		"http":  httpLoader(),
		"https": httpLoader(),
		"urn":   urnLoader{log: s.log},
	})
	if err := compiler.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return compiler.Compile(schemaURL)
}

// httpLoader is Helm's loader of http and https references.
func httpLoader() *chartutil.HTTPURLLoader {
	l := chartutil.HTTPURLLoader(http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{},
		},
	})
	return &l
}

// urnLoader is Helm's loader of urn: references: chartutil.URNResolver's
// answer, else a schema that allows anything, with a warning.
type urnLoader struct {
	log logr.Logger
}

func (l urnLoader) Load(urn string) (any, error) {
	if doc, err := chartutil.URNResolver(urn); err == nil && doc != nil {
		return doc, nil
	}
	l.log.Info("A values schema refers to a URN nothing resolves; allowing any value there, as Helm does", "urn", urn)
	return jsonschema.UnmarshalJSON(strings.NewReader("true"))
}
