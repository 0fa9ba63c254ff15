package apikinds

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ServedVersion is a further version of a kind that the CRD serves next to
// the kind's own version (Kind.Version). The kind's own version stays the
// storage version and the one the Helm runtime reads (watches.yaml): its
// spec is the chart's values as they are. A served version differs from it
// only by Renames, which the API server applies in both directions through
// the sidecar's conversion webhook (extensions/internal/conversion), so
// converting an object never changes the values its release gets.
type ServedVersion struct {
	// Name is the version, e.g. v1beta1.
	Name string `json:"name"`
	// Renames move fields of the spec: From is the path in the kind's own
	// version (the chart's values), To the path in this version.
	Renames []Rename `json:"renames,omitempty"`
}

// Rename moves one field of the spec between versions. Paths are dotted
// and relative to .spec ("webAppHostname", "database.size"); the parent of
// To must be an object of the chart's schema, and To must not be a field
// the chart already has.
type Rename struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Conversion webhook of the kinds that serve more than one version: the
// sidecar's webhook server behind config/webhook/service.yaml, before
// kustomize gives it its prefix and namespace (config/default). The path
// is where extensions/internal/conversion is served.
const (
	ConversionServiceName      = "webhook-service"
	ConversionServiceNamespace = "system"
	ConversionPath             = "/convert"
)

var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Segments splits a dotted path of the spec; nil when a segment is not a field name.
func Segments(p string) []string {
	segs := strings.Split(p, ".")
	for _, s := range segs {
		if !fieldName.MatchString(s) {
			return nil
		}
	}
	return segs
}

// ConvertedCRDs lists, sorted, the CRDs (plural.group) of the kinds that
// serve further versions: those whose conversion webhook the sidecar
// serves.
func ConvertedCRDs(kinds []Kind) []string {
	var names []string
	for _, k := range kinds {
		if len(k.Versions) > 0 {
			names = append(names, k.CRDName())
		}
	}
	sort.Strings(names)
	return names
}

// within reports whether path a is b or lies under it.
func within(a, b string) bool { return a == b || strings.HasPrefix(a, b+".") }

func (k *Kind) checkVersions() []string {
	var p []string
	seen := map[string]bool{k.Version: true}
	for i, v := range k.Versions {
		at := fmt.Sprintf("versions[%d]", i)
		switch {
		case !dnsLabel.MatchString(v.Name):
			p = append(p, fmt.Sprintf("%s.name %q must be a lower-case DNS label", at, v.Name))
		case seen[v.Name]:
			p = append(p, fmt.Sprintf("%s.name %q is listed twice (or is the kind's own version)", at, v.Name))
		}
		seen[v.Name] = true
		if len(v.Renames) == 0 {
			p = append(p, fmt.Sprintf("%s (%s) has no renames: a version with the same fields needs no conversion", at, v.Name))
		}
		var paths []string
		for j, r := range v.Renames {
			rat := fmt.Sprintf("%s.renames[%d]", at, j)
			if Segments(r.From) == nil || Segments(r.To) == nil {
				p = append(p, fmt.Sprintf("%s: from %q and to %q must be dotted paths of field names under spec", rat, r.From, r.To))
				continue
			}
			if r.From == r.To {
				p = append(p, fmt.Sprintf("%s: from and to are both %q", rat, r.From))
			}
			for _, q := range paths {
				for _, s := range []string{r.From, r.To} {
					if within(s, q) || within(q, s) {
						p = append(p, fmt.Sprintf("%s: %q overlaps %q of another rename of %s", rat, s, q, v.Name))
					}
				}
			}
			paths = append(paths, r.From, r.To)
		}
	}
	return p
}
