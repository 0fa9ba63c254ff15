package release

import (
	"bytes"
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

var chartMembers = &chartMemberCache{seed: maphash.MakeSeed()}

// chartMemberCache holds the gzip members of the charts last encoded, by
// their JSON.
type chartMemberCache struct {
	seed maphash.Seed

	mu      sync.Mutex
	entries map[uint64]*chartMember
	order   []uint64 // oldest first
}

type chartMember struct {
	json []byte // the chart's JSON, to tell a hash's collision from a hit
	gz   []byte
}

// member returns the gzip member of `{"chart":<c's JSON>,`. The bytes are
// shared: callers must not change them.
func (m *chartMemberCache) member(c *chart.Chart) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	h := maphash.Bytes(m.seed, b)
	m.mu.Lock()
	e, ok := m.entries[h]
	m.mu.Unlock()
	if ok && bytes.Equal(e.json, b) {
		return e.gz, nil
	}

	text := make([]byte, 0, len(b)+len(`{"chart":,`))
	text = append(text, `{"chart":`...)
	text = append(text, b...)
	text = append(text, ',')
	var buf bytes.Buffer
	if err := gzipRecord(&buf, text, RecordGzipLevel); err != nil {
		return nil, err
	}
	e = &chartMember{json: b, gz: buf.Bytes()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[uint64]*chartMember{}
	}
	if _, had := m.entries[h]; !had {
		m.order = append(m.order, h)
		if len(m.order) > maxChartMembers {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.entries[h] = e
	return e.gz, nil
}
