package release

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
)

// A release record holds the whole chart: its templates, values, schema
// and files, as JSON, most of the record's bytes (112 KB of the 122 KB of
// JSON of the full Nginx sample's record). Every release of a chart
// carries the same chart, and gzipping it again for every record written
// (two an install, three an upgrade) was a fifth of the runtime's CPU
// during a mass install. chartMembers gzips each chart once, as the first
// member of the records that carry it: `{"chart":<chart>,`, which the
// member of the rest of the release's JSON continues.

// maxChartMembers is how many charts' members are kept: one per chart
// version in use, and a chart whose values a release's dependencies
// change (import-values) differs by release; past this, the oldest goes.
const maxChartMembers = 16

var chartMembers = newChartMemberCache()

// chartMemberCache holds the gzip members of the charts last encoded, by
// a key of what their JSON holds (keyOf): telling whether a chart's
// member is kept costs a pass over its bytes, not an encoding of them
// (JSON encoding the chart's files as base64, once per record written
// and once per record measured, was a tenth of what an upgrade
// allocated).
type chartMemberCache struct {
	seeds [2]maphash.Seed

	mu      sync.Mutex
	entries map[chartKey]*chartMember
	order   []chartKey // oldest first
}

func newChartMemberCache() *chartMemberCache {
	return &chartMemberCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

type chartMember struct {
	jsonLen int // of the chart's JSON
	gz      []byte
}

// member returns the gzip member of `{"chart":<c's JSON>,` and the length
// of c's JSON. The bytes are shared: callers must not change them.
func (m *chartMemberCache) member(c *chart.Chart) (gz []byte, jsonLen int, err error) {
	k, err := m.keyOf(c)
	if err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if ok {
		return e.gz, e.jsonLen, nil
	}

	b, err := json.Marshal(c)
	if err != nil {
		return nil, 0, err
	}
	text := make([]byte, 0, len(b)+len(`{"chart":,`))
	text = append(text, `{"chart":`...)
	text = append(text, b...)
	text = append(text, ',')
	var buf bytes.Buffer
	if err := gzipRecord(&buf, text, RecordGzipLevel); err != nil {
		return nil, 0, err
	}
	e = &chartMember{jsonLen: len(b), gz: buf.Bytes()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[chartKey]*chartMember{}
	}
	if _, had := m.entries[k]; !had {
		m.order = append(m.order, k)
		if len(m.order) > maxChartMembers {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.entries[k] = e
	return e.gz, e.jsonLen, nil
}

// chartKey is two independently seeded 64-bit hashes of what a chart's
// JSON holds. The seeds are the process's own, drawn at random, so no
// chart can be made to collide with another on purpose, and two charts
// collide by chance with odds of one in 2^128.
type chartKey [2]uint64

// keyOf hashes every field of c that its JSON holds (chart.Chart's
// exported fields but Raw; subcharts are not in it): the small ones as
// their JSON, the templates, schema and files as their bytes. Every part
// is written with its length, and nil apart from empty where JSON tells
// them apart, so that two charts hash alike only if their JSON is alike.
func (m *chartMemberCache) keyOf(c *chart.Chart) (chartKey, error) {
	var h keyHash
	h.a.SetSeed(m.seeds[0])
	h.b.SetSeed(m.seeds[1])
	for _, v := range []any{c.Metadata, c.Lock, c.Values} {
		b, err := json.Marshal(v)
		if err != nil {
			return chartKey{}, err
		}
		h.bytes(b, true)
	}
	h.bytes(c.Schema, c.Schema != nil)
	for _, files := range [][]*chart.File{c.Templates, c.Files} {
		h.int(len(files))
		h.bool(files != nil)
		for _, f := range files {
			h.bool(f != nil)
			if f != nil {
				h.string(f.Name)
				h.bytes(f.Data, f.Data != nil)
			}
		}
	}
	return chartKey{h.a.Sum64(), h.b.Sum64()}, nil
}

// keyHash writes to both of a key's hashes.
type keyHash struct{ a, b maphash.Hash }

func (h *keyHash) int(n int) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(n))
	_, _ = h.a.Write(buf[:])
	_, _ = h.b.Write(buf[:])
}

func (h *keyHash) bool(v bool) {
	n := 0
	if v {
		n = 1
	}
	h.int(n)
}

// string writes s's length and s.
func (h *keyHash) string(s string) {
	h.int(len(s))
	_, _ = h.a.WriteString(s)
	_, _ = h.b.WriteString(s)
}

// bytes writes whether b is set (not nil), its length and b.
func (h *keyHash) bytes(b []byte, set bool) {
	h.bool(set)
	h.int(len(b))
	_, _ = h.a.Write(b)
	_, _ = h.b.Write(b)
}
