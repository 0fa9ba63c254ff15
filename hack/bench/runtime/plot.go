package main

import (
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plot: a line per runtime of time-to-all-Deployed against N, drawn
// with gonum's plot.

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

// writePlot draws the plot of results as a PNG at path.
func writePlot(path string, results []Result) error {
	p := plot.New()
	p.Title.Text = "Time until all N Nginx resources are Deployed (floor: a bare client creating the objects)"
	p.X.Label.Text = "N (resources)"
	p.Y.Label.Text = "seconds"
	// Log-log: N spans two orders of magnitude (100 to 10,000), and a
	// runtime whose time grows linearly with N is a straight line of slope 1.
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	for i, s := range seriesOf(results) {
		xys := make(plotter.XYs, len(s.points))
		for j, pt := range s.points {
			xys[j].X, xys[j].Y = pt[0], pt[1]
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		pts.Color = plotutil.Color(i)
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(-10)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(9*vg.Inch, 5.6*vg.Inch, path)
}
