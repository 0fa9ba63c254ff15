package crdgen

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// ConvertedVersion is the CRD version v of a kind whose own version is
// storage: storage's schema with v's renames applied to the spec (the
// property, required, CEL rules that name it, descriptions), its printer
// columns' paths likewise, served and not stored.
func ConvertedVersion(storage apiextensionsv1.CustomResourceDefinitionVersion, storageName string, v apikinds.ServedVersion) (apiextensionsv1.CustomResourceDefinitionVersion, error) {
	out := *storage.DeepCopy()
	out.Name = v.Name
	out.Storage = false
	out.Served = true
	root := out.Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	var problems []string
	for _, r := range v.Renames {
		if err := moveProperty(&spec, r); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("version %s: %s", v.Name, strings.Join(problems, "; "))
	}
	if err := rewriteRules(&spec, nil, v.Renames); err != nil {
		return out, fmt.Errorf("version %s: %w", v.Name, err)
	}
	rewriteDescriptions(&spec, v.Renames)
	var names []string
	for _, r := range v.Renames {
		names = append(names, fmt.Sprintf("spec.%s is the chart value %s", r.To, r.From))
	}
	spec.Description += fmt.Sprintf(" In %s, %s; the API server stores %s, which uses the chart's names, and converts between the two.",
		v.Name, strings.Join(names, ", "), storageName)
	root.Properties["spec"] = spec
	for i := range out.AdditionalPrinterColumns {
		col := &out.AdditionalPrinterColumns[i]
		for _, r := range v.Renames {
			col.JSONPath = renamePath(col.JSONPath, ".spec."+r.From, ".spec."+r.To)
		}
		col.Description = renameWords(col.Description, v.Renames)
	}
	return out, nil
}

// renamePath replaces the prefix from of a JSONPath by to, when from is a
// whole field of it.
func renamePath(p, from, to string) string {
	if p == from {
		return to
	}
	for _, sep := range []string{".", "["} {
		if strings.HasPrefix(p, from+sep) {
			return to + strings.TrimPrefix(p, from)
		}
	}
	return p
}

// moveProperty moves the property at r.From to r.To in spec, with its
// place in the parent's required list.
func moveProperty(spec *apiextensionsv1.JSONSchemaProps, r apikinds.Rename) error {
	from, to := apikinds.Segments(r.From), apikinds.Segments(r.To)
	name, newName := from[len(from)-1], to[len(to)-1]
	var prop apiextensionsv1.JSONSchemaProps
	var required bool
	// Check both ends before changing anything.
	err := atObject(spec, to[:len(to)-1], func(p *apiextensionsv1.JSONSchemaProps) error {
		if _, taken := p.Properties[newName]; taken {
			return fmt.Errorf("the chart's schema already has that field")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rename to %q: %w", r.To, err)
	}
	// Within one object the field keeps its place in required.
	sameParent := slices.Equal(from[:len(from)-1], to[:len(to)-1])
	err = atObject(spec, from[:len(from)-1], func(p *apiextensionsv1.JSONSchemaProps) error {
		var ok bool
		if prop, ok = p.Properties[name]; !ok {
			return fmt.Errorf("the chart's schema has no such field")
		}
		delete(p.Properties, name)
		if i := slices.Index(p.Required, name); i >= 0 {
			req := slices.Clone(p.Required)
			if sameParent {
				req[i] = newName
			} else {
				required = true
				req = slices.Delete(req, i, i+1)
			}
			p.Required = req
		}
		if sameParent {
			p.Properties[newName] = prop
		}
		return nil
	})
	if err != nil || sameParent {
		if err != nil {
			return fmt.Errorf("rename from %q: %w", r.From, err)
		}
		return nil
	}
	return atObject(spec, to[:len(to)-1], func(p *apiextensionsv1.JSONSchemaProps) error {
		p.Properties[newName] = prop
		if required {
			p.Required = append(slices.Clone(p.Required), newName)
		}
		return nil
	})
}

// atObject calls f on the object schema at path under s (s itself for an
// empty path), each step a declared property with declared properties, and
// writes the changed schemas back into their parents.
func atObject(s *apiextensionsv1.JSONSchemaProps, path []string, f func(*apiextensionsv1.JSONSchemaProps) error) error {
	return atObjectFrom(s, nil, path, f)
}

func atObjectFrom(s *apiextensionsv1.JSONSchemaProps, done, path []string, f func(*apiextensionsv1.JSONSchemaProps) error) error {
	if s.Properties == nil {
		return fmt.Errorf("%s is not an object with declared fields", strings.Join(done, "."))
	}
	if len(path) == 0 {
		return f(s)
	}
	c, ok := s.Properties[path[0]]
	if !ok {
		return fmt.Errorf("the chart's schema has no field %q", strings.Join(append(done, path[0]), "."))
	}
	if err := atObjectFrom(&c, append(slices.Clone(done), path[0]), path[1:], f); err != nil {
		return err
	}
	s.Properties[path[0]] = c
	return nil
}

// rewriteRules rewrites, in the CEL rules of s (at path under spec) and of
// every schema below it, references to a renamed field
// ("self.webAppHostname", "has(self.a.b)") and field paths. A rule that
// names a renamed field it cannot reach by the new path (the field moved
// out from under it) is an error.
func rewriteRules(s *apiextensionsv1.JSONSchemaProps, path []string, renames []apikinds.Rename) error {
	here := strings.Join(path, ".")
	for i := range s.XValidations {
		rule := &s.XValidations[i]
		for _, r := range renames {
			relFrom, ok := relative(r.From, here)
			if !ok {
				continue
			}
			ref := regexp.MustCompile(`\bself\.` + regexp.QuoteMeta(relFrom) + `\b`)
			field := regexp.MustCompile(`^\.` + regexp.QuoteMeta(relFrom) + `\b`)
			if !ref.MatchString(rule.Rule) && !ref.MatchString(rule.MessageExpression) && !field.MatchString(rule.FieldPath) {
				continue
			}
			relTo, ok := relative(r.To, here)
			if !ok {
				return fmt.Errorf("the rule %q at spec.%s names %s, which the rename to %q moves out of its reach", rule.Rule, here, r.From, r.To)
			}
			rule.Rule = ref.ReplaceAllString(rule.Rule, "self."+relTo)
			rule.MessageExpression = ref.ReplaceAllString(rule.MessageExpression, "self."+relTo)
			rule.FieldPath = field.ReplaceAllString(rule.FieldPath, "."+relTo)
		}
	}
	var err error
	forEachChild(s, func(name string, c *apiextensionsv1.JSONSchemaProps) {
		if err == nil {
			err = rewriteRules(c, append(slices.Clone(path), name), renames)
		}
	})
	return err
}

// relative returns p relative to the object at base ("" is spec itself),
// and whether p lies strictly under it.
func relative(p, base string) (string, bool) {
	if base == "" {
		return p, true
	}
	if strings.HasPrefix(p, base+".") {
		return strings.TrimPrefix(p, base+"."), true
	}
	return "", false
}

// forEachChild calls f on each property schema (by name; items and
// additionalProperties as "*") of s, writing changes back.
func forEachChild(s *apiextensionsv1.JSONSchemaProps, f func(name string, c *apiextensionsv1.JSONSchemaProps)) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := s.Properties[n]
		f(n, &c)
		s.Properties[n] = c
	}
	if s.Items != nil && s.Items.Schema != nil {
		f("*", s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		f("*", s.AdditionalProperties.Schema)
	}
}

// rewriteDescriptions renames, in the descriptions and rule messages of s
// and every schema below it, the renamed paths where they appear as words
// ("Ingress routing webAppHostname to the app Service").
func rewriteDescriptions(s *apiextensionsv1.JSONSchemaProps, renames []apikinds.Rename) {
	s.Description = renameWords(s.Description, renames)
	for i := range s.XValidations {
		s.XValidations[i].Message = renameWords(s.XValidations[i].Message, renames)
	}
	forEachChild(s, func(_ string, c *apiextensionsv1.JSONSchemaProps) { rewriteDescriptions(c, renames) })
}

// renameWords replaces each rename's From path, as a whole word of text
// (not part of a longer name or path), by its To path.
func renameWords(text string, renames []apikinds.Rename) string {
	for _, r := range renames {
		word := regexp.MustCompile(`(^|[^A-Za-z0-9_.])(spec\.)?` + regexp.QuoteMeta(r.From) + `($|[^A-Za-z0-9_])`)
		// Adjacent matches share a separator: repeat until none is left.
		for word.MatchString(text) {
			text = word.ReplaceAllString(text, "${1}${2}"+r.To+"${3}")
		}
	}
	return text
}

// addVersions adds the kind's further served versions to crd, and the
// conversion webhook that converts between them.
func addVersions(crd *apiextensionsv1.CustomResourceDefinition, k *apikinds.Kind) error {
	if len(k.Versions) == 0 {
		return nil
	}
	storage := crd.Spec.Versions[0]
	for _, v := range k.Versions {
		cv, err := ConvertedVersion(storage, k.Version, v)
		if err != nil {
			return err
		}
		crd.Spec.Versions = append(crd.Spec.Versions, cv)
	}
	path := apikinds.ConversionPath
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{
					Namespace: apikinds.ConversionServiceNamespace,
					Name:      apikinds.ConversionServiceName,
					Path:      &path,
				},
			},
		},
	}
	return nil
}
