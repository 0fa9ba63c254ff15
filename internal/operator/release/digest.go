package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// DigestLabel is the label on Helm's release record (the release Secret)
// that holds the digest of the chart and the final values the release was
// installed or upgraded with (see [Digest]).
//
// The library's reconciler decides whether a release needs an upgrade by
// running a server-side dry-run upgrade on every reconcile and comparing
// the rendered manifest with the deployed one: a full render plus one
// dry-run request per object, even when nothing changed. The runtime
// records the digest on every install and upgrade, and answers that dry-run
// itself, with the deployed release, when the digest of what the dry-run
// would render equals the recorded one. Anything that changes the digest (an
// edited spec, a generated value, a new chart shipped with a new operator
// version) still goes through the library's dry-run and upgrade.
const DigestLabel = "platform.acme.com/release-digest"

// digestVersion is hashed into every digest; bump it when what the digest
// covers changes, so that old records stop matching.
const digestVersion = "platform-operator release digest v1"

// lookupCall matches templates that call Helm's lookup function. What such
// a chart renders depends on live cluster objects, not only on the chart
// and the values, so its digest never stands for its manifest.
var lookupCall = regexp.MustCompile(`\blookup\b`)

// capabilitiesCall matches templates that read the capabilities; only
// their digests depend on them.
var capabilitiesCall = regexp.MustCompile(`\.Capabilities\b`)

// ChartDigest is the digest of a chart's content.
type ChartDigest struct {
	sum string
	// skippable is false for charts whose rendering depends on more than
	// the chart and the values (templates calling lookup).
	skippable bool
	// capabilities is set for charts whose templates read .Capabilities.
	capabilities bool
	err          error
}

// ChartDigests remembers the content digest of each loaded chart. A chart
// is loaded once per watch and never changes afterwards, so the pointer
// identifies its content.
type ChartDigests struct {
	m sync.Map // *chart.Chart -> ChartDigest
}

// Of returns the digest of chrt, computed once.
func (c *ChartDigests) Of(chrt *chart.Chart) ChartDigest {
	if cd, ok := c.m.Load(chrt); ok {
		return cd.(ChartDigest)
	}
	cd := DigestChart(chrt)
	c.m.Store(chrt, cd)
	return cd
}

// DigestChart hashes chrt: its metadata, templates, files, default values,
// schema and dependencies, recursively.
func DigestChart(chrt *chart.Chart) ChartDigest {
	if chrt == nil {
		return ChartDigest{err: errors.New("no chart")}
	}
	h := sha256.New()
	skippable, capabilities, err := hashChart(h, chrt)
	return ChartDigest{sum: hex.EncodeToString(h.Sum(nil)), skippable: skippable, capabilities: capabilities, err: err}
}

// Digest returns the digest of a release rendered from the chart whose
// digest is cd with vals on a server with caps: SHA-256 over the chart's
// content, the final values the library passes to Helm and, for charts
// whose templates read .Capabilities, the server's version and API
// versions, truncated to 40 hex digits so that it fits a label value. ok is
// false when the chart's rendering depends on the live cluster (it calls
// lookup), so that equal digests do not mean equal manifests.
func Digest(cd ChartDigest, vals map[string]interface{}, caps *chartutil.Capabilities) (digest string, ok bool, err error) {
	if cd.err != nil {
		return "", false, cd.err
	}
	v, err := json.Marshal(vals) // map keys are sorted: the encoding is canonical
	if err != nil {
		return "", false, fmt.Errorf("encode values: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\nchart %s\nvalues %d\n", digestVersion, cd.sum, len(v))
	h.Write(v)
	if cd.capabilities {
		fmt.Fprintf(h, "\ncapabilities %s\n", CapabilitiesFingerprint(caps))
	}
	return hex.EncodeToString(h.Sum(nil))[:40], cd.skippable, nil
}

// hashChart writes chrt's content, and its dependencies', to h.
func hashChart(h hash.Hash, chrt *chart.Chart) (skippable, capabilities bool, err error) {
	// Every field is length-prefixed by encoding/json or explicitly, so that
	// no two different charts produce the same byte stream.
	content := struct {
		Metadata  *chart.Metadata        `json:"metadata"`
		Lock      *chart.Lock            `json:"lock"`
		Templates []*chart.File          `json:"templates"`
		Files     []*chart.File          `json:"files"`
		Values    map[string]interface{} `json:"values"`
		Schema    []byte                 `json:"schema"`
	}{chrt.Metadata, chrt.Lock, chrt.Templates, chrt.Files, chrt.Values, chrt.Schema}
	b, err := json.Marshal(content)
	if err != nil {
		return false, false, fmt.Errorf("digest chart %s: %w", chrt.Name(), err)
	}
	fmt.Fprintf(h, "chart %d\n", len(b))
	h.Write(b)
	skippable = true
	for _, t := range chrt.Templates {
		if lookupCall.Match(t.Data) {
			skippable = false
		}
		if capabilitiesCall.Match(t.Data) {
			capabilities = true
		}
	}
	deps := chrt.Dependencies()
	fmt.Fprintf(h, "dependencies %d\n", len(deps))
	for _, d := range deps {
		ok, caps, err := hashChart(h, d)
		if err != nil {
			return false, false, err
		}
		skippable = skippable && ok
		capabilities = capabilities || caps
	}
	return skippable, capabilities, nil
}

// CapabilitiesFingerprint identifies caps in release digests.
func CapabilitiesFingerprint(caps *chartutil.Capabilities) string {
	if caps == nil {
		return "none"
	}
	versions := slices.Clone(caps.APIVersions)
	slices.Sort(versions)
	h := sha256.New()
	fmt.Fprintf(h, "kube %s\napis %d\n%s", caps.KubeVersion.Version, len(versions), strings.Join(versions, "\n"))
	return hex.EncodeToString(h.Sum(nil))
}
