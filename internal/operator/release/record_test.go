package release

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	pkgerrors "github.com/pkg/errors"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	hrelease "helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// randomText returns n characters that do not compress much (base64 of
// random bytes: 6 bits a character), as a large certificate bundle or
// encoded blob in a spec would be.
func randomText(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n*3/4+3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// testRecord is the release of helmtest.Chart with greeting set to
// greeting, its manifest rendered from it as the chart does.
func testRecord(greeting string) *hrelease.Release {
	return &hrelease.Release{
		Name: "big", Namespace: "acc", Version: 1,
		Chart:    helmtest.Chart(nil),
		Config:   map[string]interface{}{"greeting": greeting, "replicas": 2},
		Manifest: "---\n# Source: web/templates/cm.yaml\ngreeting: " + greeting + "\n",
		Info:     &hrelease.Info{Status: hrelease.StatusPendingInstall, Description: "Initial install underway"},
	}
}

// decodeRecord reads the release back from a record's data as Helm's
// driver does: base64, a gzip reader (of every member), JSON.
func decodeRecord(g Gomega, data []byte) *hrelease.Release {
	zipped, err := base64.StdEncoding.DecodeString(string(data))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var back hrelease.Release
	g.ExpectWithOffset(1, json.NewDecoder(zr).Decode(&back)).To(Succeed())
	return &back
}

// storedSize is the size of rel's record as the runtime's storage writes
// it (helmstorage.Secrets writes EncodeRecord's bytes, and its tests read
// them back through Helm's driver).
func storedSize(t *testing.T, rel *hrelease.Release) int {
	t.Helper()
	data, err := EncodeRecord(rel)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// TestRecordSize: the measure, which keeps no bytes, is the size of the
// record the storage writes, byte for byte, small or large.
func TestRecordSize(t *testing.T) {
	for _, n := range []int{5, 300_000, 900_000} {
		g := NewWithT(t)
		rel := testRecord(randomText(t, n))
		size, err := RecordSize(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(size).To(Equal(storedSize(t, rel)), "greeting of %d characters", n)
	}
}

// randomWord is a word of 3 to 8 letters of r's choice.
func randomWord(r *mrand.Rand) string {
	b := make([]byte, 3+r.IntN(6))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// TestEncodeRecord: a record is gzipped at RecordGzipLevel, and at best
// compression when only that keeps it under the limit.
func TestEncodeRecord(t *testing.T) {
	g := NewWithT(t)
	// YAML-like lines, which best compression packs tighter than the
	// default level does.
	r := mrand.New(mrand.NewPCG(1, 2))
	var text strings.Builder
	for text.Len() < 200_000 {
		fmt.Fprintf(&text, "  - name: item-%d\n    value: %q\n", r.IntN(5000), randomWord(r)+randomWord(r))
	}
	rel := testRecord(text.String())
	b, err := json.Marshal(rel)
	g.Expect(err).NotTo(HaveOccurred())
	encoded := func(zipped []byte) []byte {
		return []byte(base64.StdEncoding.EncodeToString(zipped))
	}
	zipped, err := recordGzip(rel, MaxRecordSize)
	g.Expect(err).NotTo(HaveOccurred())
	fast := encoded(zipped)
	var buf bytes.Buffer
	g.Expect(gzipRecord(&buf, b, gzip.BestCompression)).To(Succeed())
	best := encoded(buf.Bytes())
	g.Expect(len(best)).To(BeNumerically("<", len(fast)), "the text tells the levels apart")

	data, err := EncodeRecord(rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(data, fast)).To(BeTrue(), "under the limit: the runtime's level")
	cases := []struct {
		limit int
		want  []byte
	}{
		{len(fast) + 1000, fast},
		{len(fast), fast},
		// Over the limit at the runtime's level: best compression, which
		// fits, or the smallest record there is, which the size check
		// refuses.
		{len(fast) - 1, best},
		{len(best), best},
		{len(best) - 1, best},
	}
	for _, tc := range cases {
		zipped, err := recordGzip(rel, tc.limit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.Equal(encoded(zipped), tc.want)).To(BeTrue(), "limit %d: %d bytes, want %d", tc.limit, len(encoded(zipped)), len(tc.want))
	}
}

func TestCheckRecord(t *testing.T) {
	cases := []struct {
		name string
		// greeting is the release's greeting, in its values and its
		// manifest.
		greeting string
		// compressed: the record's JSON is too long for the bound to rule
		// the limit out, so the check compresses it.
		compressed bool
		// tooLarge: the record is refused.
		tooLarge bool
	}{
		{name: "a small release", greeting: "hello"},
		// 2 × 450,000 characters at 6 bits each is about 675 KB gzipped,
		// 900 KB in base64: under the limit, though its JSON is long
		// enough that only compressing it tells.
		{name: "a large release that fits", greeting: randomText(t, 450_000), compressed: true},
		// 1.5 MB of JSON that compresses to almost nothing.
		{name: "a large release that compresses", greeting: strings.Repeat("a", 750_000), compressed: true},
		// 2 × 600,000 characters: about 900 KB gzipped, 1.2 MB in base64.
		{name: "a release over the limit", greeting: randomText(t, 600_000), compressed: true, tooLarge: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rel := testRecord(tc.greeting)
			b, err := json.Marshal(rel)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(maxEncodedSize(len(b)) > MaxRecordSize).To(Equal(tc.compressed), "compressed")
			err = CheckRecord(rel)
			if !tc.tooLarge {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var tooLarge *RecordTooLargeError
			g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "%v", err)
			g.Expect(tooLarge.Size).To(Equal(storedSize(t, rel)))
			g.Expect(tooLarge.Size).To(BeNumerically(">", MaxRecordSize))
			g.Expect(tooLarge.Largest).To(Equal([]ValueSize{{Name: "greeting", Bytes: len(tc.greeting) + 2}, {Name: "replicas", Bytes: 1}}))
			g.Expect(err.Error()).To(And(
				HavePrefix("the record of release big in namespace acc would be "),
				ContainSubstring("bytes, over the 1048576 bytes (1 MiB) a Secret may hold"),
				ContainSubstring("the largest values are greeting (600002 bytes), replicas (1 bytes)")))
		})
	}
}

// TestJSONStringLen: the bound of a string's JSON holds for what JSON
// escapes, and is exact for plain text.
func TestJSONStringLen(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []string{"", "plain text", "<&>", "\"\\\n\r\t\b\f\x00\x1f\x7f", "é\u2028\u2029\ufffd", "\xff\xfe", "a\xc3"} {
		b, err := json.Marshal(s)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(jsonStringLen(s)).To(BeNumerically(">=", len(b)), "%q", s)
	}
	g.Expect(jsonStringLen("plain text")).To(Equal(len(`"plain text"`)))
}

// TestMaxEncodedSize: the bound under which CheckRecord does not compress
// holds for what compresses worst, random bytes, in the record's two gzip
// members, at every size up to past the limit.
func TestMaxEncodedSize(t *testing.T) {
	g := NewWithT(t)
	for _, n := range []int{0, 1, 100, 16_384, 65_536, 100_000, 700_000, 1_200_000} {
		b := make([]byte, n)
		_, err := rand.Read(b)
		g.Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		g.Expect(gzipRecord(&buf, b[:n*9/10], RecordGzipLevel)).To(Succeed())
		g.Expect(gzipRecord(&buf, b[n*9/10:], RecordGzipLevel)).To(Succeed())
		size := base64.StdEncoding.EncodedLen(buf.Len())
		g.Expect(size).To(BeNumerically("<=", maxEncodedSize(n)), "%d random bytes", n)
	}
	g.Expect(maxEncodedSize(600_000)).To(BeNumerically("<", MaxRecordSize), "a record of 600 KB of JSON is not compressed")
}

// TestEncodeRecordSharesTheChart: records of releases of one chart begin
// with the same gzip member, the chart's, and each reads back, through a
// gzip reader as Helm's driver reads it, as its own release.
func TestEncodeRecordSharesTheChart(t *testing.T) {
	g := NewWithT(t)
	decode := func(data []byte) *hrelease.Release { return decodeRecord(g, data) }
	jsonOf := func(rel *hrelease.Release) string {
		b, err := json.Marshal(rel)
		g.Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	hello, bye := testRecord("hello"), testRecord("bye")
	bye.Version, bye.Info.Status = 2, hrelease.StatusDeployed
	member, _, err := chartMembers.member(hello.Chart)
	g.Expect(err).NotTo(HaveOccurred())
	for _, rel := range []*hrelease.Release{hello, bye} {
		data, err := EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(jsonOf(decode(data))).To(Equal(jsonOf(rel)), "release %d reads back whole", rel.Version)
		zipped, err := base64.StdEncoding.DecodeString(string(data))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.HasPrefix(zipped, member)).To(BeTrue(), "release %d starts with the chart's member", rel.Version)
	}

	other := testRecord("hello")
	other.Chart.Values = map[string]interface{}{"greeting": "changed"}
	data, err := EncodeRecord(other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(decode(data).Chart.Values).To(Equal(other.Chart.Values), "another chart, its own member")

	noChart := testRecord("hello")
	noChart.Chart = nil
	data, err = EncodeRecord(noChart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jsonOf(decode(data))).To(Equal(jsonOf(noChart)))

	onlyChart := &hrelease.Release{Chart: hello.Chart}
	data, err = EncodeRecord(onlyChart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jsonOf(decode(data))).To(Equal(jsonOf(onlyChart)))
}

// TestInstallRecord: the release built from a render splits hooks from
// the manifest and orders the manifest by kind, as Helm's install does.
func TestInstallRecord(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]interface{}{"greeting": "hi"}
	rel, err := installRecord("web", "acc", helmtest.Chart(nil), vals, testFiles)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Name).To(Equal("web"))
	g.Expect(rel.Namespace).To(Equal("acc"))
	g.Expect(rel.Config).To(Equal(vals))
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
	g.Expect(rel.Manifest).To(Equal("---\n# Source: web/templates/cm.yaml\n" + testFiles["web/templates/cm.yaml"] +
		"---\n# Source: web/templates/deploy.yaml\n" + deploy +
		"---\n# Source: web/templates/deploy.yaml\n" + deploy))
	g.Expect(rel.Hooks).To(HaveLen(1))
	g.Expect(rel.Hooks[0].Name).To(Equal("check"))

	_, err = installRecord("web", "acc", helmtest.Chart(nil), vals, map[string]string{"web/templates/bad.yaml": "kind: [\n"})
	g.Expect(err).To(HaveOccurred(), "a manifest Helm cannot parse")
	err = CheckInstallRecord("web", "acc", helmtest.Chart(nil), map[string]interface{}{"greeting": randomText(t, 600_000)},
		map[string]string{"web/templates/bad.yaml": "kind: [\n" + randomText(t, 600_000)})
	g.Expect(err).To(HaveOccurred(), "a manifest Helm cannot parse, long enough to be built")
	var tooLarge *RecordTooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeFalse())
}

// testFiles is a render: two manifests, one of them twice in its file, a
// hook, and an empty file.
var testFiles = map[string]string{
	"web/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
	"web/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	"web/templates/hook.yaml":   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: check\n  annotations:\n    helm.sh/hook: post-install\n",
	"web/templates/empty.yaml":  "\n",
}

// TestCheckInstallRecord: the record of a render is measured when it is
// large, refused when it is too large; the bound that spares the small ones
// the work holds for what JSON escapes most.
func TestCheckInstallRecord(t *testing.T) {
	configMap := func(data string) map[string]string {
		return map[string]string{"web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: |\n" + data}
	}
	cases := []struct {
		name     string
		greeting string
		files    map[string]string
		tooLarge bool
	}{
		{name: "a small render", greeting: "hi", files: testFiles},
		{name: "what JSON escapes", greeting: strings.Repeat("<&>\n\"\t\x01\xff\u2028é", 1000), files: configMap(strings.Repeat("    <&>\"\\\t é\n", 1000))},
		{name: "a render over the limit", greeting: randomText(t, 600_000), files: configMap("    " + randomText(t, 600_000) + "\n"), tooLarge: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			chrt, vals := helmtest.Chart(nil), map[string]interface{}{"greeting": tc.greeting}
			rel, err := installRecord("web", "acc", chrt, vals, tc.files)
			g.Expect(err).NotTo(HaveOccurred())
			b, err := json.Marshal(rel)
			g.Expect(err).NotTo(HaveOccurred())
			bound, err := installRecordBound(chrt, vals, tc.files)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bound).To(BeNumerically(">=", len(b)), "the bound holds")

			err = CheckInstallRecord("web", "acc", chrt, vals, tc.files)
			if !tc.tooLarge {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var tooLarge *RecordTooLargeError
			g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "%v", err)
			size, err := RecordSize(rel)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tooLarge.Size).To(Equal(size))
		})
	}
}

// TestRecordRefused: the API server's refusal of a release record for its
// size, as Helm's Secrets driver returns it, is told from other failures.
func TestRecordRefused(t *testing.T) {
	invalid := func(kind, name string, errs ...*field.Error) error {
		return pkgerrors.Wrap(apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, errs), "create: failed to create")
	}
	tooLong := field.TooLong(field.NewPath("data"), "", MaxRecordSize)
	cases := []struct {
		name    string
		err     error
		refused bool
	}{
		{"the record's data too long", invalid("Secret", "sh.helm.release.v1.big.v1", tooLong), true},
		{"another field of the record", invalid("Secret", "sh.helm.release.v1.big.v1", field.Invalid(field.NewPath("metadata", "labels"), "x", "bad")), false},
		{"a Secret of the release's own", invalid("Secret", "big-tls", tooLong), false},
		{"a ConfigMap of the release", invalid("ConfigMap", "big", field.TooLong(field.NewPath(""), "", MaxRecordSize)), false},
		{"a request too large to read", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), false},
		{"another error", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(RecordRefused(tc.err)).To(Equal(tc.refused))
		})
	}
	err := &RecordTooLargeError{Release: "big", Namespace: "acc", Err: invalid("Secret", "sh.helm.release.v1.big.v1", tooLong)}
	g := NewWithT(t)
	g.Expect(err.Error()).To(And(
		HavePrefix("the record of release big in namespace acc is over the 1048576 bytes (1 MiB) a Secret may hold"),
		ContainSubstring(`(the API server refused the record: create: failed to create: Secret "sh.helm.release.v1.big.v1" is invalid: data: Too long`)))
	g.Expect(RecordRefused(err)).To(BeTrue(), "it unwraps to the API server's refusal")
}

// BenchmarkCheckRecord measures the admission check's measure of a
// typical release, the WebApp chart with its sample spec: the bound alone
// (check), against building and encoding the record, which the bound
// spares it (encode), and the chart's render, which the admission check
// does for every resource anyway (render). Figures: docs/benchmarks.md.
// TestEncodeRecordReusesWriters: the gzip writers are reused from one
// record to the next, and each record is what a new writer writes, and
// reads back as its release.
func TestEncodeRecordReusesWriters(t *testing.T) {
	g := NewWithT(t)
	// What new writers write: the chart's member, then the rest's.
	fresh := func(rel *hrelease.Release) []byte {
		chartJSON, err := json.Marshal(rel.Chart)
		g.Expect(err).NotTo(HaveOccurred())
		rest := *rel
		rest.Chart = nil
		restJSON, err := json.Marshal(&rest)
		g.Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		for _, part := range [][]byte{append(append([]byte(`{"chart":`), chartJSON...), ','), restJSON[1:]} {
			zw, err := gzip.NewWriterLevel(&buf, RecordGzipLevel)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = zw.Write(part)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(zw.Close()).To(Succeed())
		}
		return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
	}
	for i, greeting := range []string{"hello", randomText(t, 50_000), "hello", "bye"} {
		rel := testRecord(greeting)
		data, err := EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.Equal(data, fresh(rel))).To(BeTrue(), "record %d", i)
		g.Expect(decodeRecord(g, data).Config["greeting"]).To(Equal(greeting), "record %d", i)
	}
}

// BenchmarkEncodeRecord: the bytes allocated per record written.
func BenchmarkEncodeRecord(b *testing.B) {
	rel := testRecord("hello")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRecord(rel); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckRecord(b *testing.B) {
	chrt, err := loader.LoadDir("../../../helm-charts/webapp")
	if err != nil {
		b.Fatal(err)
	}
	vals := map[string]interface{}{
		"webAppReplicas": 2, "webAppImage": "example/app:v1.4", "webAppHostname": "app.acme.com", "deploymentTier": "dev",
		// The value the runtime generates.
		"database": map[string]interface{}{"auth": map[string]interface{}{"password": strings.Repeat("x", 32)}},
	}
	render := func() map[string]string {
		top, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "shop", Namespace: "acc", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
		if err != nil {
			b.Fatal(err)
		}
		files, err := engine.Render(chrt, top)
		if err != nil {
			b.Fatal(err)
		}
		for f := range files {
			if strings.HasSuffix(f, "NOTES.txt") {
				delete(files, f)
			}
		}
		return files
	}
	files := render()
	rel, err := installRecord("shop", "acc", chrt, vals, files)
	if err != nil {
		b.Fatal(err)
	}
	size, err := RecordSize(rel)
	if err != nil {
		b.Fatal(err)
	}
	bound, err := installRecordBound(chrt, vals, files)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("record of %d bytes, manifest of %d bytes; bound of the JSON %d bytes, of the record %d", size, len(rel.Manifest), bound, maxEncodedSize(bound))
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := CheckInstallRecord("shop", "acc", chrt, vals, files); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			rel, err := installRecord("shop", "acc", chrt, vals, files)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := RecordSize(rel); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("render", func(b *testing.B) {
		for b.Loop() {
			render()
		}
	})
}
