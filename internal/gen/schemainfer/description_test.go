package schemainfer

import (
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	yamlv3 "go.yaml.in/yaml/v3"
)

func TestDescription(t *testing.T) {
	tests := []struct {
		name   string
		values string   // values.yaml
		path   []string // map keys, or list indexes, down to the key
		want   string
	}{
		{
			name:   "comment above",
			values: "a: 1\n# The b value.\nb: 2\n",
			path:   []string{"b"},
			want:   "The b value.",
		},
		{
			name:   "lines joined, blank comment lines and extra hashes dropped",
			values: "## First line,\n#\n#   second line.\nb: 2\n",
			path:   []string{"b"},
			want:   "First line, second line.",
		},
		// A blank line ends the description: what is above belongs to the
		// file or to the previous key.
		{
			name:   "blank line",
			values: "# Defaults for the chart.\n\n# The b value.\nb: 2\nc: 3\n",
			path:   []string{"b"},
			want:   "The b value.",
		},
		{
			name:   "no comment",
			values: "# Defaults for the chart.\n\nb: 2\nc: 3\n",
			path:   []string{"c"},
			want:   "",
		},
		{
			name:   "first line",
			values: "b: 2\n",
			path:   []string{"b"},
			want:   "",
		},
		{
			name:   "nested key",
			values: "a:\n  # The b value.\n  b: 2\n",
			path:   []string{"a", "b"},
			want:   "The b value.",
		},
		// A less indented comment directly above still describes the key.
		{
			name:   "comment indented less",
			values: "a:\n# The b value.\n  b: 2\n",
			path:   []string{"a", "b"},
			want:   "The b value.",
		},
		// Commented-out content of the entry above is indented deeper than
		// the next key.
		{
			name:   "commented-out content above",
			values: "annotations: {}\n  # example.com/key: value\nhosts: []\n",
			path:   []string{"hosts"},
			want:   "",
		},
		{
			name:   "commented-out content under a description",
			values: "a:\n  b: {}\n  # The c value.\n    # example: 1\n  c: 2\n",
			path:   []string{"a", "c"},
			want:   "",
		},
		{
			name:   "helm-docs",
			values: "# -- The b value,\n# in two lines.\n# @default -- computed\nb: 2\n",
			path:   []string{"b"},
			want:   "The b value, in two lines.",
		},
		{
			name:   "list item",
			values: "ports:\n  # The port's name.\n  - name: http\n    # The port.\n    port: 80\n",
			path:   []string{"ports", "0", "name"},
			want:   "The port's name.",
		},
		{
			name:   "second key of a list item",
			values: "ports:\n  # The port's name.\n  - name: http\n    # The port.\n    port: 80\n",
			path:   []string{"ports", "0", "port"},
			want:   "The port.",
		},
		// A key inside a flow mapping shares its line; the comment above
		// describes the line's first key only.
		{
			name:   "flow mapping",
			values: "# The point.\npoint: {x: 1, y: 2}\n",
			path:   []string{"point", "x"},
			want:   "",
		},
		{
			name:   "CRLF line ends",
			values: "a: 1\r\n# The b value.\r\nb: 2\r\n",
			path:   []string{"b"},
			want:   "The b value.",
		},
		{
			name:   "non-ASCII",
			values: "# Größe.\ngröße: 1\n",
			path:   []string{"größe"},
			want:   "Größe.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			src := newSource([]byte(tt.values))
			g.Expect(src.root).NotTo(BeNil())
			var key *yamlv3.Node
			n := src.root
			for _, step := range tt.path {
				if i, err := strconv.Atoi(step); err == nil {
					n = resolve(n).Content[i]
					continue
				}
				p, ok := mappingPairs(n)[step]
				g.Expect(ok).To(BeTrue(), "no key %q", step)
				key, n = p.key, p.value
			}
			g.Expect(src.description(key)).To(Equal(tt.want))
		})
	}
}
