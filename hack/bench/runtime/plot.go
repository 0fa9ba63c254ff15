package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The plot is drawn by hand with image/png: a line per runtime of
// time-to-all-Deployed against N, axes with ticks and a legend, text in a
// built-in 5x7 bitmap font (upper case, digits and a few signs).

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xff, 0x7f, 0x0e, 0xff}, // orange
}

// series is one runtime's points (N, seconds).
type series struct {
	name   string
	points [][2]float64
}

// seriesOf groups complete time-to-Deployed results by runtime, in the
// order runtimes first appear, points sorted by N.
func seriesOf(results []Result) []series {
	var out []series
	index := map[string]int{}
	for _, r := range results {
		if r.Deployed != r.N || r.AllDeployed <= 0 {
			continue
		}
		i, ok := index[r.Runtime]
		if !ok {
			i = len(out)
			index[r.Runtime] = i
			out = append(out, series{name: r.Runtime})
		}
		out[i].points = append(out[i].points, [2]float64{float64(r.N), r.AllDeployed.Seconds()})
	}
	for _, s := range out {
		sort.Slice(s.points, func(a, b int) bool { return s.points[a][0] < s.points[b][0] })
	}
	return out
}

// niceStep returns a round tick step for a range of span with about n ticks.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// axis returns the end of an axis for values up to max, with about n
// round ticks (step apart) and at least pad times max of room. The step
// comes from max itself, so that the room does not add a tick of nothing.
func axis(max float64, n int, pad float64) (end, step float64) {
	step = niceStep(max, n)
	return math.Ceil(max*pad/step) * step, step
}

func writePlot(path string, results []Result) error {
	ss := seriesOf(results)
	const w, h = 900, 560
	const left, right, top, bottom = 90, 30, 60, 80
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})

	maxX, maxY := 0.0, 0.0
	for _, s := range ss {
		for _, p := range s.points {
			maxX, maxY = math.Max(maxX, p[0]), math.Max(maxY, p[1])
		}
	}
	if maxX == 0 {
		maxX = 1000
	}
	if maxY == 0 {
		maxY = 10
	}
	// Some room right of the largest N and above the slowest time.
	maxX, xStep := axis(maxX, 5, 1.05)
	maxY, yStep := axis(maxY, 6, 1.1)
	px := func(x float64) int { return left + int(x/maxX*float64(w-left-right)) }
	py := func(y float64) int { return h - bottom - int(y/maxY*float64(h-top-bottom)) }

	grey, black := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, color.RGBA{0, 0, 0, 0xff}
	for y := 0.0; y <= maxY+1e-9; y += yStep {
		line(img, px(0), py(y), px(maxX), py(y), grey, 1)
		label := trimFloat(y)
		text(img, left-10-textWidth(label, 2), py(y)-7, label, black, 2)
	}
	for x := 0.0; x <= maxX+1e-9; x += xStep {
		line(img, px(x), py(0), px(x), py(0)+6, black, 1)
		label := trimFloat(x)
		text(img, px(x)-textWidth(label, 2)/2, py(0)+12, label, black, 2)
	}
	line(img, px(0), py(0), px(maxX), py(0), black, 2)
	line(img, px(0), py(0), px(0), py(maxY), black, 2)
	title := "TIME UNTIL ALL N NGINX RESOURCES ARE DEPLOYED (S)"
	text(img, (w-textWidth(title, 2))/2, 20, title, black, 2)
	xl := "N (RESOURCES)"
	text(img, (w-textWidth(xl, 2))/2, h-30, xl, black, 2)

	for i, s := range ss {
		c := palette[i%len(palette)]
		for j, p := range s.points {
			x, y := px(p[0]), py(p[1])
			fill(img, image.Rect(x-4, y-4, x+5, y+5), c)
			if j > 0 {
				q := s.points[j-1]
				line(img, px(q[0]), py(q[1]), x, y, c, 3)
			}
		}
		// Legend, top left inside the plot.
		ly := top + 10 + i*24
		fill(img, image.Rect(left+20, ly, left+44, ly+14), c)
		text(img, left+54, ly, strings.ToUpper(s.name), black, 2)
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws a line of the given thickness (Bresenham, square brush).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, thick int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		fill(img, image.Rect(x0-thick/2, y0-thick/2, x0-thick/2+thick, y0-thick/2+thick), c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// text draws s at (x, y) (top left) with the 5x7 font scaled by scale.
// Characters without a glyph are drawn as blanks.
func text(img *image.RGBA, x, y int, s string, c color.RGBA, scale int) {
	for _, r := range strings.ToUpper(s) {
		if g, ok := glyphs[r]; ok {
			for row, bits := range strings.Fields(g) {
				for col, b := range bits {
					if b == '#' {
						fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
					}
				}
			}
		}
		x += 6 * scale
	}
}

func textWidth(s string, scale int) int { return len(s)*6*scale - scale }

// glyphs is a 5x7 font: seven rows of five cells, '#' set, '.' clear.
var glyphs = map[rune]string{
	'0': ".###. #...# #..## #.#.# ##..# #...# .###.",
	'1': "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
	'2': ".###. #...# ....# ...#. ..#.. .#... #####",
	'3': "####. ....# ....# .###. ....# ....# ####.",
	'4': "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
	'5': "##### #.... ####. ....# ....# #...# .###.",
	'6': ".###. #.... #.... ####. #...# #...# .###.",
	'7': "##### ....# ...#. ..#.. .#... .#... .#...",
	'8': ".###. #...# #...# .###. #...# #...# .###.",
	'9': ".###. #...# #...# .#### ....# ....# .###.",
	'A': ".###. #...# #...# ##### #...# #...# #...#",
	'B': "####. #...# #...# ####. #...# #...# ####.",
	'C': ".###. #...# #.... #.... #.... #...# .###.",
	'D': "####. #...# #...# #...# #...# #...# ####.",
	'E': "##### #.... #.... ####. #.... #.... #####",
	'F': "##### #.... #.... ####. #.... #.... #....",
	'G': ".###. #...# #.... #.### #...# #...# .####",
	'H': "#...# #...# #...# ##### #...# #...# #...#",
	'I': ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
	'J': "..### ...#. ...#. ...#. ...#. #..#. .##..",
	'K': "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
	'L': "#.... #.... #.... #.... #.... #.... #####",
	'M': "#...# ##.## #.#.# #.#.# #...# #...# #...#",
	'N': "#...# #...# ##..# #.#.# #..## #...# #...#",
	'O': ".###. #...# #...# #...# #...# #...# .###.",
	'P': "####. #...# #...# ####. #.... #.... #....",
	'Q': ".###. #...# #...# #...# #.#.# #..#. .##.#",
	'R': "####. #...# #...# ####. #.#.. #..#. #...#",
	'S': ".#### #.... #.... .###. ....# ....# ####.",
	'T': "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
	'U': "#...# #...# #...# #...# #...# #...# .###.",
	'V': "#...# #...# #...# #...# #...# .#.#. ..#..",
	'W': "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
	'X': "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
	'Y': "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
	'Z': "##### ....# ...#. ..#.. .#... #.... #####",
	'.': "..... ..... ..... ..... ..... .##.. .##..",
	'-': "..... ..... ..... .###. ..... ..... .....",
	'/': "....# ....# ...#. ..#.. .#... #.... #....",
	'(': "...#. ..#.. .#... .#... .#... ..#.. ...#.",
	')': ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
	'=': "..... ..... ##### ..... ##### ..... .....",
	':': "..... .##.. .##.. ..... .##.. .##.. .....",
}
