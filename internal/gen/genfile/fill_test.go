package genfile

import "testing"

func TestFill(t *testing.T) {
	for _, c := range []struct {
		prefix, text string
		width        int
		want         string
	}{
		{"#", "one two three", 8, "# one\n# two\n# three\n"},
		{"#", "one two three", 13, "# one two\n# three\n"},
		{"  ", "averyverylongword x", 6, "   averyverylongword\n   x\n"},
		{"#", "", 78, "#\n"},
	} {
		if got := Fill(c.prefix, c.text, c.width); got != c.want {
			t.Errorf("Fill(%q, %q, %d) = %q, want %q", c.prefix, c.text, c.width, got, c.want)
		}
	}
}
