package release

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"

	hrelease "helm.sh/helm/v3/pkg/release"
)

// A record the runtime's storage wrote is tens of KiB, nearly all of it
// its chart, the same for every release of the chart. RecordParts holds
// one in memory compactly: the chart, decoded once and shared, and the
// JSON of the rest deflated against a dictionary, the rest of the first
// record of that chart held. Two releases of one chart differ in little
// but their names, values and times: the Nginx sample's rest, 13.7 KB of
// JSON, deflates to 3.2 KB alone and to about 250 bytes against another
// release's.

// restDictLevel is the deflate level of held rests: BestSpeed finds no
// matches in the dictionary.
const restDictLevel = 6

// restDict is the dictionary of one chart's held rests, set by the first
// rest held, with a deflate writer that uses it. Writers are kept in
// channels, not sync.Pools, which empty at every garbage collection: a
// deflate writer is about 1 MiB, and a new one per write was a fifth of
// what holding a record allocated.
type restDict struct {
	once    sync.Once
	dict    []byte
	writers chan *flate.Writer // one, on dict
}

// RecordParts is a record the runtime's storage wrote, held compactly
// (see above). The zero value holds nothing.
type RecordParts struct {
	ref    *chartRead
	packed []byte
}

// SplitRecord returns the parts of data, a record's base64 payload, and
// false when it is not a record whose first gzip member is a chart's. A
// record of a chart read or held before is not decoded from base64 but
// for its rest.
func SplitRecord(data []byte) (RecordParts, bool) {
	e, rest, _, err := recordRest(data)
	if err != nil || e == nil {
		return RecordParts{}, false
	}
	text, ok := gunzipRest(rest)
	if !ok {
		return RecordParts{}, false
	}
	packed, err := e.deflate(text)
	if err != nil {
		return RecordParts{}, false
	}
	return RecordParts{ref: e, packed: packed}, true
}

// Decode returns the release of the record p was split from, as
// DecodeRecord returns it, with a chart of its own; false when p holds
// none or it does not decode.
func (p RecordParts) Decode() (*hrelease.Release, bool) {
	if p.ref == nil {
		return nil, false
	}
	text, err := p.ref.inflate(p.packed)
	if err != nil {
		return nil, false
	}
	return decodeRest(p.ref.chart, text)
}

// deflate returns text deflated against the chart's dictionary, which
// the first text deflated sets.
func (d *restDict) deflate(text []byte) ([]byte, error) {
	d.once.Do(func() {
		d.dict = bytes.Clone(text)
		d.writers = make(chan *flate.Writer, 1)
	})
	var buf bytes.Buffer
	var w *flate.Writer
	select {
	case w = <-d.writers:
		w.Reset(&buf)
	default:
		var err error
		if w, err = flate.NewWriterDict(&buf, restDictLevel, d.dict); err != nil {
			return nil, err
		}
	}
	defer func() {
		select {
		case d.writers <- w:
		default:
		}
	}()
	if _, err := w.Write(text); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// inflateReaders are flate readers kept for inflate (see restDict).
var inflateReaders = make(chan io.ReadCloser, 4) // each a flate.Resetter

// inflate returns the text packed holds, deflated against the chart's
// dictionary.
func (d *restDict) inflate(packed []byte) ([]byte, error) {
	in := bytes.NewReader(packed)
	var r io.ReadCloser
	select {
	case r = <-inflateReaders:
		if err := r.(flate.Resetter).Reset(in, d.dict); err != nil {
			return nil, err
		}
	default:
		r = flate.NewReaderDict(in, d.dict)
	}
	defer func() {
		select {
		case inflateReaders <- r:
		default:
		}
	}()
	var out bytes.Buffer
	out.Grow(len(d.dict) + 2*len(packed))
	if _, err := out.ReadFrom(r); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
