package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The record of a release: Helm's Secrets driver stores each revision of a
// release in one Secret, its record. The release (its chart, its values,
// the rendered manifest and hooks) is encoded as JSON, gzipped and
// base64-encoded into the Secret's data.release. Helm gzips at best
// compression; the runtime's storage writes the same records gzipped at
// RecordGzipLevel (EncodeRecord), which Helm reads as it reads its own.
// The API server refuses a Secret whose data exceed 1 MiB, so a spec whose
// record is larger can never be installed or upgraded: Helm fails after
// doing everything but the write, and no retry changes that.
//
// The admission check measures the record of the release it renders
// (CheckInstallRecord); the runtime's release storage
// measures every record before it creates it (package helmstorage), and
// its action path the release of every dry-run upgrade. Both refuse with a
// RecordTooLargeError.

// MaxRecordSize is the most bytes a release record may hold: the API server
// refuses a Secret whose data exceed corev1.MaxSecretSize.
const MaxRecordSize = corev1.MaxSecretSize

// RecordGzipLevel is the level at which the runtime's storage gzips a
// record. Helm's driver gzips at best compression, which costs about 1.7
// times the CPU of the default level for records 0.7 % smaller; gzipping
// records was a fifth of the runtime's CPU at N=1000. Lower levels cost
// less still but grow records by 4 % (level 4) to 23 % (level 1)
// (docs/benchmarks.md, "Release records and values schema: CPU per
// action"). Helm's decoder reads any level: it checks only the gzip
// header.
const RecordGzipLevel = gzip.DefaultCompression

// EncodeRecord returns the data of rel's record as the runtime's storage
// writes it: rel as JSON, gzipped at RecordGzipLevel, base64-encoded. The
// JSON of rel's chart, the same for every release of a chart, is gzipped
// once as a member of its own (chartMembers), and the rest of rel after
// it: a gzip stream of two members, which Helm's decoder, like every gzip
// reader, reads as the one JSON object. A record that would then exceed
// MaxRecordSize is rel's JSON gzipped at best compression instead, as
// Helm's driver gzips every record, so that the runtime refuses no record
// Helm could store.
func EncodeRecord(rel *hrelease.Release) ([]byte, error) {
	zipped, err := recordGzip(rel, MaxRecordSize)
	if err != nil {
		return nil, err
	}
	data := make([]byte, base64.StdEncoding.EncodedLen(len(zipped)))
	base64.StdEncoding.Encode(data, zipped)
	return data, nil
}

// recordGzip returns rel's record before base64: its chart's member and
// the rest of its JSON at RecordGzipLevel, or, when that would exceed limit
// once base64-encoded, its JSON at best compression.
func recordGzip(rel *hrelease.Release, limit int) ([]byte, error) {
	var buf bytes.Buffer
	rest := *rel
	rest.Chart = nil
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, fmt.Errorf("encode release %s: %w", rel.Name, err)
	}
	switch {
	case rel.Chart != nil && len(b) > len("{}"):
		member, _, err := chartMembers.member(rel.Chart)
		if err != nil {
			return nil, fmt.Errorf("encode release %s: %w", rel.Name, err)
		}
		buf.Write(member)
		b = b[1:] // the member opened the object
	case rel.Chart != nil: // nothing but the chart: one member
		if b, err = json.Marshal(rel); err != nil {
			return nil, fmt.Errorf("encode release %s: %w", rel.Name, err)
		}
	}
	if err := gzipRecord(&buf, b, RecordGzipLevel); err != nil {
		return nil, err
	}
	if base64.StdEncoding.EncodedLen(buf.Len()) <= limit {
		return buf.Bytes(), nil
	}
	whole, err := json.Marshal(rel)
	if err != nil {
		return nil, fmt.Errorf("encode release %s: %w", rel.Name, err)
	}
	buf.Reset()
	if err := gzipRecord(&buf, whole, gzip.BestCompression); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipRecord writes b to w gzipped at level.
func gzipRecord(w io.Writer, b []byte, level int) error {
	if level == RecordGzipLevel {
		zw := recordWriters.Get().(*gzip.Writer)
		defer recordWriters.Put(zw)
		zw.Reset(w)
		return writeAll(zw, b)
	}
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return err
	}
	return writeAll(zw, b)
}

// writeAll writes b to zw and closes it.
func writeAll(zw *gzip.Writer, b []byte) error {
	if _, err := zw.Write(b); err != nil {
		return err
	}
	return zw.Close()
}

// recordWriters are gzip writers at RecordGzipLevel for reuse. A writer
// holds about 1 MiB of compressor state, allocated on its first write: a
// new writer for every record (three records written per upgrade, one
// measured per dry-run) was a sixth of everything the runtime allocated
// in a mass upgrade, and a large part of its live heap while eight ran
// (docs/benchmarks.md).
var recordWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, RecordGzipLevel)
	if err != nil {
		panic(err) // RecordGzipLevel is a valid level
	}
	return zw
}}

// RecordSize returns the size in bytes of rel's record as the runtime's
// storage writes it (EncodeRecord).
func RecordSize(rel *hrelease.Release) (int, error) {
	zipped, err := recordGzip(rel, MaxRecordSize)
	if err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(len(zipped)), nil
}

// CheckRecord returns a *RecordTooLargeError when rel's record would exceed
// MaxRecordSize. It compresses the record only when its JSON is long enough
// that the record might: most records are a small part of the limit, and
// compressing one costs many times what encoding it does
// (BenchmarkCheckRecord).
func CheckRecord(rel *hrelease.Release) error {
	n, err := recordJSONLen(rel)
	if err != nil {
		return fmt.Errorf("encode release %s: %w", rel.Name, err)
	}
	if maxEncodedSize(n) <= MaxRecordSize {
		return nil
	}
	size, err := RecordSize(rel)
	if err != nil {
		return err
	}
	if size <= MaxRecordSize {
		return nil
	}
	return &RecordTooLargeError{Release: rel.Name, Namespace: rel.Namespace, Size: size, Largest: LargestValues(rel.Config)}
}

// recordJSONLen is the length of rel's JSON: that of rel without its
// chart, and that of the chart, which its kept member knows (the chart
// goes in as `"chart":<chart>,` after the opening brace, or as
// `"chart":<chart>` when it is all there is).
func recordJSONLen(rel *hrelease.Release) (int, error) {
	rest := *rel
	rest.Chart = nil
	b, err := json.Marshal(&rest)
	if err != nil || rel.Chart == nil {
		return len(b), err
	}
	_, chartLen, err := chartMembers.member(rel.Chart)
	if err != nil {
		return 0, err
	}
	n := len(b) + len(`"chart":`) + chartLen
	if len(b) > len("{}") {
		n++ // the comma after the chart
	}
	return n, nil
}

// maxEncodedSize bounds the record of n bytes of JSON. Deflate stores a
// block it cannot compress as it is, with a 5-byte header, or, when the
// block's input has left its window, codes it with the fixed Huffman code,
// at most 9 bits a byte; each of the record's two gzip members adds 18
// bytes of header and trailer. n/8 covers the worst of those, n/1024 and
// 64 a member the block headers.
func maxEncodedSize(n int) int {
	return base64.StdEncoding.EncodedLen(n + n/8 + n/1024 + 2*64)
}

// CheckInstallRecord returns a *RecordTooLargeError when the record of an
// install of chrt with vals as name in namespace, which rendered files
// (engine.Render's output without NOTES.txt), would exceed MaxRecordSize.
// It builds the record only when a bound from the lengths of its parts
// says that it might exceed it: building it means parsing every rendered
// manifest again, which costs a fifth of the render (BenchmarkCheckRecord).
//
// The record is the one Helm's install stores, but for what the admission
// check does not have: the notes (NOTES.txt, a few lines) and the owner
// references the library's post-renderer adds to each object (a few
// hundred bytes an object). The runtime measures the release Helm stores,
// exactly.
func CheckInstallRecord(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, files map[string]string) error {
	bound, err := installRecordBound(chrt, vals, files)
	if err != nil {
		return err
	}
	if maxEncodedSize(bound) <= MaxRecordSize {
		return nil
	}
	rel, err := installRecord(name, namespace, chrt, vals, files)
	if err != nil {
		return err
	}
	return CheckRecord(rel)
}

// recordOverhead bounds, in bytes of JSON, what a record holds beside its
// chart, its values and its rendered files: its name, namespace, version
// and info.
const recordOverhead = 1024

// docOverhead bounds what each rendered document adds to a record beside
// its text and its file's name: the "---" and "# Source:" lines before it
// in the manifest, or, for a hook, its fields (events, weight, policies,
// last run).
const docOverhead = 512

// installRecordBound bounds the length of the JSON of the record that
// installRecord builds. Each document of a file is in the record once,
// in the manifest or as a hook, whose name and kind it repeats: twice its
// text bounds it.
func installRecordBound(chrt *chart.Chart, vals map[string]interface{}, files map[string]string) (int, error) {
	c, err := json.Marshal(chrt)
	if err != nil {
		return 0, fmt.Errorf("encode chart %s: %w", chrt.Name(), err)
	}
	v, err := json.Marshal(vals)
	if err != nil {
		return 0, fmt.Errorf("encode values: %w", err)
	}
	n := len(c) + len(v) + recordOverhead
	for name, content := range files {
		docs := strings.Count(content, "---") + 1
		n += 2*jsonStringLen(content) + docs*(2*jsonStringLen(name)+docOverhead)
	}
	return n, nil
}

// jsonStringLen bounds the length of s as a JSON string, quotes included,
// as encoding/json writes it: it escapes quotes, backslashes and control
// characters, and <, >, & and invalid UTF-8 as \uXXXX.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&':
				n++
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			n += 6 * size
		} else {
			n += size
		}
		i += size
	}
	return n
}

// installRecord returns the release an install of chrt with vals as name
// in namespace stores, from the files the chart rendered: its hooks and
// its manifest split and ordered as Helm's install does (see
// CheckInstallRecord for what it leaves out).
func installRecord(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, files map[string]string) (*hrelease.Release, error) {
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return &hrelease.Release{
		Name:      name,
		Namespace: namespace,
		Chart:     chrt,
		Config:    vals,
		Manifest:  b.String(),
		Hooks:     hooks,
		Version:   1,
		Info:      &hrelease.Info{Status: hrelease.StatusPendingInstall, Description: "Initial install underway"},
	}, nil
}

// ValueSize is the size of one top-level value of a release, as JSON.
type ValueSize struct {
	Name  string
	Bytes int
}

// maxLargest is how many values a RecordTooLargeError names.
const maxLargest = 3

// LargestValues returns the top-level values of vals that are largest as
// JSON, largest first, at most three: what a spec whose record is too large
// should make smaller. A value usually weighs twice in a record, once in
// the values and once in what the chart renders from it.
func LargestValues(vals map[string]interface{}) []ValueSize {
	sizes := make([]ValueSize, 0, len(vals))
	for k, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		sizes = append(sizes, ValueSize{Name: k, Bytes: len(b)})
	}
	slices.SortFunc(sizes, func(a, b ValueSize) int {
		if a.Bytes != b.Bytes {
			return b.Bytes - a.Bytes
		}
		return strings.Compare(a.Name, b.Name)
	})
	return sizes[:min(len(sizes), maxLargest)]
}

// RecordTooLargeError refuses a release whose record the API server would
// not store.
type RecordTooLargeError struct {
	// Release and Namespace name the release.
	Release, Namespace string
	// Size is the record's size in bytes; 0 when only the API server's
	// refusal (Err) tells that it is too large.
	Size int
	// Largest are the release's largest top-level values (LargestValues).
	Largest []ValueSize
	// Err is the API server's refusal of the record, when it refused it.
	Err error
}

func (e *RecordTooLargeError) Error() string {
	var b strings.Builder
	if e.Size > 0 {
		fmt.Fprintf(&b, "the record of release %s in namespace %s would be %d bytes, over the %d bytes (1 MiB) a Secret may hold",
			e.Release, e.Namespace, e.Size, MaxRecordSize)
	} else {
		fmt.Fprintf(&b, "the record of release %s in namespace %s is over the %d bytes (1 MiB) a Secret may hold",
			e.Release, e.Namespace, MaxRecordSize)
	}
	b.WriteString(": Helm stores each revision of a release in one Secret, so this spec can never be installed or upgraded")
	if len(e.Largest) > 0 {
		parts := make([]string, len(e.Largest))
		for i, v := range e.Largest {
			parts[i] = fmt.Sprintf("%s (%d bytes)", v.Name, v.Bytes)
		}
		fmt.Fprintf(&b, "; the largest values are %s", strings.Join(parts, ", "))
	}
	b.WriteString("; make them smaller, or keep large data in a ConfigMap or Secret of its own")
	if e.Err != nil {
		fmt.Fprintf(&b, " (the API server refused the record: %v)", e.Err)
	}
	return b.String()
}

func (e *RecordTooLargeError) Unwrap() error { return e.Err }

// RecordRefused reports whether err is the API server refusing to store a
// release record for its size: the record's Secret is invalid because its
// data are too long. CheckRecord keeps such records from the API server;
// this is for a limit it did not foresee. (A request too large to be read,
// 413, names no object, so it cannot be told from an object of the release
// that is too large; a record that large is far over the limit, which
// CheckRecord catches.)
func RecordRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	if details == nil || details.Kind != "Secret" || !strings.HasPrefix(details.Name, "sh.helm.release.v1.") {
		return false
	}
	for _, c := range details.Causes {
		if c.Type == metav1.CauseTypeTooLong && c.Field == "data" {
			return true
		}
	}
	return false
}
