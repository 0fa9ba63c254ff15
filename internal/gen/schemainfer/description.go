package schemainfer

import (
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// source is values.yaml as text and as a YAML node tree, for what the
// decoded values lose: comments, positions and tags.
type source struct {
	lines []string
	root  *yamlv3.Node // nil when values.yaml has no node tree
}

// newSource parses data for comments. Helm's YAML 1.1 parser has the final
// word on values; when this YAML 1.2 parser disagrees or fails, the schema
// just has fewer descriptions.
func newSource(data []byte) *source {
	s := &source{lines: strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")}
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) == nil {
		s.root = &doc
	}
	return s
}

// resolve returns the node n stands for: the content of a document, the
// target of an alias.
func resolve(n *yamlv3.Node) *yamlv3.Node {
	for n != nil {
		switch {
		case n.Kind == yamlv3.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		case n.Kind == yamlv3.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

type pair struct{ key, value *yamlv3.Node }

// mappingPairs returns the key and value nodes of a mapping node by key,
// including keys merged in with "<<" (explicit keys win, as in YAML).
func mappingPairs(n *yamlv3.Node) map[string]pair {
	n = resolve(n)
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil
	}
	pairs := map[string]pair{}
	var merged []*yamlv3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yamlv3.ScalarNode && k.Value == "<<" && k.Style == 0 {
			merged = append(merged, v)
			continue
		}
		pairs[k.Value] = pair{key: k, value: v}
	}
	for _, m := range merged {
		m = resolve(m)
		sources := []*yamlv3.Node{m}
		if m != nil && m.Kind == yamlv3.SequenceNode {
			sources = m.Content
		}
		for _, src := range sources {
			for k, p := range mappingPairs(src) {
				if _, ok := pairs[k]; !ok {
					pairs[k] = p
				}
			}
		}
	}
	return pairs
}

// description returns the comment describing the key node: the comment lines
// directly above it (no blank line between), indented no deeper than the key,
// without their '#' and joined with spaces. The first line loses a helm-docs
// "-- " prefix, and helm-docs annotations (lines starting with '@') are
// dropped. A comment indented deeper than the key is the commented-out
// content of the entry above, not a description; a key that does not start
// its line (in a flow mapping) has none.
func (s *source) description(key *yamlv3.Node) string {
	if key == nil || key.Line < 2 || key.Line > len(s.lines) {
		return ""
	}
	keyLine := []rune(s.lines[key.Line-1])
	indent := key.Column - 1
	if indent > len(keyLine) || strings.Trim(string(keyLine[:indent]), " -") != "" {
		return ""
	}
	var block []string
	for i := key.Line - 2; i >= 0; i-- {
		text := strings.TrimLeft(s.lines[i], " ")
		if !strings.HasPrefix(text, "#") || len(s.lines[i])-len(text) > indent {
			break
		}
		block = append(block, text)
	}
	var words []string
	for i := len(block) - 1; i >= 0; i-- {
		text := strings.TrimSpace(strings.TrimLeft(block[i], "#"))
		if len(words) == 0 && (text == "--" || strings.HasPrefix(text, "-- ")) {
			text = strings.TrimSpace(strings.TrimPrefix(text, "--"))
		}
		if text == "" || strings.HasPrefix(text, "@") {
			continue
		}
		words = append(words, text)
	}
	return strings.Join(words, " ")
}
