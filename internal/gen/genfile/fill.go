// Package genfile is how the generators write the repository's files:
// a generator that fails leaves the tree as it was (Staged), and the YAML
// they write wraps its comments at a fixed width (Fill).
package genfile

import "strings"

// Fill returns text's words as lines of at most width characters, each
// line prefix followed by its words with a space before each, and each
// ending in a newline. A word longer than a line gets a line of its own.
func Fill(prefix, text string, width int) string {
	var b strings.Builder
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > width && line != prefix {
			b.WriteString(line + "\n")
			line = prefix
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
	return b.String()
}
