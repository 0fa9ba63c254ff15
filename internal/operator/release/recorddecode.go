package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// Reading a record as Helm's driver does (base64, gunzip, JSON) decodes
// the whole chart again for every record read: half the CPU of a read,
// and most of what it allocates, in a mass upgrade that reads each
// release's deployed record. A record the runtime's storage wrote starts
// with its chart's gzip member (EncodeRecord), the same bytes in every
// record of that chart, so DecodeRecord decodes each such member once,
// keeps the chart it holds, and decodes only the rest of each record.

// DecodeRecord returns the release in data, a record's base64 payload,
// as Helm's driver decodes it. A record whose first gzip member is a
// chart's member (`{"chart":<chart>,`) gets a copy of that chart, decoded
// once (chartReads), and the rest of its JSON decoded; any other record
// (Helm's own: one member; one without gzip) is decoded whole.
func DecodeRecord(data []byte) (*hrelease.Release, error) {
	e, rest, whole, err := recordRest(data)
	if err != nil {
		return nil, err
	}
	if e != nil {
		if text, ok := gunzipRest(rest); ok {
			if rls, ok := decodeRest(e.chart, text); ok {
				return rls, nil
			}
		}
		if whole == nil {
			if whole, err = decodeBase64(data); err != nil {
				return nil, err
			}
		}
	}
	return decodeWhole(whole)
}

// recordRest returns the entry of the chart whose member data, a record's
// base64 payload, begins with, and the gzip bytes after that member; a
// nil entry when data is not a chart's member and a rest. A record of a
// chart read before is decoded from base64 only from its rest on
// (entryOfBase64); any other is decoded whole, and whole is what it
// decoded to (nil when it was not decoded whole).
func recordRest(data []byte) (e *chartRead, rest, whole []byte, err error) {
	if e, rest, ok := chartReads.entryOfBase64(data); ok {
		return e, rest, nil, nil
	}
	if whole, err = decodeBase64(data); err != nil {
		return nil, nil, nil, err
	}
	if len(whole) < 3 || !bytes.Equal(whole[:3], gzipMagic) {
		return nil, nil, whole, nil
	}
	e, rest, _ = chartReads.chartOf(whole)
	return e, rest, whole, nil
}

func decodeBase64(data []byte) ([]byte, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	return b[:n], err
}

// decodeWhole decodes b, gunzipped when it is gzip, as Helm's driver does.
func decodeWhole(b []byte) (*hrelease.Release, error) {
	if len(b) > 3 && bytes.Equal(b[:3], gzipMagic) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer func() { _ = r.Close() }()
		if b, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	var rls hrelease.Release
	if err := json.Unmarshal(b, &rls); err != nil {
		return nil, err
	}
	return &rls, nil
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// chartMemberPrefix opens a chart's member (chartMemberCache.member).
const chartMemberPrefix = `{"chart":`

// gunzipReaders are gzip readers kept for gunzipRest: a few, held
// whatever the garbage collector does (a sync.Pool empties at every
// collection, and a reader is 40 KiB).
var gunzipReaders = make(chan *gzip.Reader, 4)

// gunzipRest returns the JSON in rest, the gzip member after a record's
// chart member, with the object's opening brace (which the chart's member
// holds) in front.
func gunzipRest(rest []byte) ([]byte, bool) {
	var r *gzip.Reader
	select {
	case r = <-gunzipReaders:
		if r.Reset(bytes.NewReader(rest)) != nil {
			return nil, false
		}
	default:
		var err error
		if r, err = gzip.NewReader(bytes.NewReader(rest)); err != nil {
			return nil, false
		}
	}
	defer func() {
		select {
		case gunzipReaders <- r:
		default:
		}
	}()
	var buf bytes.Buffer
	buf.Grow(4 * len(rest))
	buf.WriteByte('{')
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// decodeRest decodes text, the JSON of a record but its chart, as the
// release it and chrt make, and reports false when text is not the rest
// of a release.
func decodeRest(chrt *chart.Chart, text []byte) (*hrelease.Release, bool) {
	var rls hrelease.Release
	if err := json.Unmarshal(text, &rls); err != nil || rls.Chart != nil {
		// Not the rest of a release, or one naming a chart again (which
		// a whole decode would merge): decoded whole.
		return nil, false
	}
	rls.Chart = manifest.CopyChart(chrt)
	return &rls, true
}

// chartReads keeps the charts of the chart members last read.
var chartReads = &chartReadCache{}

// chartReadCache holds, for the last charts read (maxChartMembers), a
// chart member's bytes and the chart they hold, decoded. It is never
// handed out: readers get copies (manifest.CopyChart), which Helm may
// edit.
type chartReadCache struct {
	mu      sync.Mutex
	entries []*chartRead // oldest first
}

type chartRead struct {
	gz    []byte
	chart *chart.Chart
	// gzBase64 is the base64 of gz's whole 3-byte groups: how every
	// record of the chart begins (entryOfBase64).
	gzBase64 []byte
	// restDict is what the rests of this chart's records held in memory
	// are deflated against (RecordParts).
	restDict
}

// chartOf returns the entry of b's first gzip member and the bytes after
// that member, and false when that member is not a chart's.
func (c *chartReadCache) chartOf(b []byte) (*chartRead, []byte, bool) {
	c.mu.Lock()
	for _, e := range c.entries {
		if len(b) > len(e.gz) && bytes.Equal(b[:len(e.gz)], e.gz) {
			c.mu.Unlock()
			return e, b[len(e.gz):], true
		}
	}
	c.mu.Unlock()

	// The first member alone: the reader takes bytes from a bytes.Reader
	// one at a time and stops at the member's end.
	in := bytes.NewReader(b)
	r, err := gzip.NewReader(in)
	if err != nil {
		return nil, nil, false
	}
	r.Multistream(false)
	text, err := io.ReadAll(r)
	if err != nil || len(text) < len(chartMemberPrefix)+1 || string(text[:len(chartMemberPrefix)]) != chartMemberPrefix || text[len(text)-1] != ',' {
		return nil, nil, false
	}
	end := len(b) - in.Len()
	if end >= len(b) {
		return nil, nil, false // nothing after the chart: not a record of two members
	}
	var chrt chart.Chart
	if err := json.Unmarshal(text[len(chartMemberPrefix):len(text)-1], &chrt); err != nil {
		return nil, nil, false
	}
	e := &chartRead{gz: bytes.Clone(b[:end]), chart: &chrt}
	e.gzBase64 = []byte(base64.StdEncoding.EncodeToString(e.gz[:len(e.gz)/3*3]))
	c.mu.Lock()
	c.entries = append(c.entries, e)
	if len(c.entries) > maxChartMembers {
		c.entries = c.entries[1:]
	}
	c.mu.Unlock()
	return e, b[end:], true
}

// entryOfBase64 returns the entry of the chart whose member data, a
// record's base64 payload, begins with, and the bytes after that member,
// decoded; false when no entry's member begins it. Only the bytes from
// the member's last whole 3-byte group on are decoded.
func (c *chartReadCache) entryOfBase64(data []byte) (*chartRead, []byte, bool) {
	c.mu.Lock()
	var e *chartRead
	for _, cand := range c.entries {
		if len(data) > len(cand.gzBase64) && bytes.Equal(data[:len(cand.gzBase64)], cand.gzBase64) {
			e = cand
			break
		}
	}
	c.mu.Unlock()
	if e == nil {
		return nil, nil, false
	}
	tail := data[len(e.gzBase64):]
	b := make([]byte, base64.StdEncoding.DecodedLen(len(tail)))
	n, err := base64.StdEncoding.Decode(b, tail)
	if err != nil {
		return nil, nil, false
	}
	b = b[:n]
	left := e.gz[len(e.gz)/3*3:] // the member's last bytes, under 3
	if len(b) <= len(left) || !bytes.Equal(b[:len(left)], left) {
		return nil, nil, false
	}
	return e, b[len(left):], true
}
