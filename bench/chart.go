package bench

import (
	"fmt"
	"image/color"
	"os"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// peerColors are fixed per peer so charts from different runs compare.
var peerColors = map[string]color.Color{
	"strand":    color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"kfake":     color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"jetstream": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"null":      color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff},
}

// WriteChart draws the medians as a PNG of four grouped bar charts —
// throughput, throughput by partitions, round-trip latency, end-to-end
// latency — with each bar labelled by its value.
func (r *Report) WriteChart(path string) error {
	o := r.Options
	size := func(b int) string {
		if b%1024 == 0 {
			return fmt.Sprintf("%d KB", b/1024)
		}
		return fmt.Sprintf("%d B", b)
	}
	type group struct {
		label  string
		metric string
	}
	var scale []group
	for _, p := range o.ScalePartitions {
		scale = append(scale, group{fmt.Sprintf("%d partition(s)", p), ScaleMetric(p) + "_mibps"})
	}
	panels := []struct {
		title, unit string
		div         float64 // metric value / div = plotted value
		groups      []group
	}{
		{"Throughput (MiB/s, higher is better)", "MiB/s", 1, []group{
			{"produce " + size(o.Size), MetricProduce + "_mibps"},
			{"produce " + size(o.SmallSize), MetricProduceSmall + "_mibps"},
			{"consume " + size(o.Size), MetricConsume + "_mibps"},
		}},
		{fmt.Sprintf("Produce %s by partitions (MiB/s)", size(o.Size)), "MiB/s", 1, scale},
		{"Single-record produce round trip (µs, lower is better)", "µs", float64(time.Microsecond), []group{
			{"p50", MetricRTT + "_p50"}, {"p99", MetricRTT + "_p99"},
		}},
		{fmt.Sprintf("End-to-end latency at %d rec/s (ms, lower is better)", o.E2ERate), "ms", float64(time.Millisecond), []group{
			{"p50", MetricE2E + "_p50"}, {"p99", MetricE2E + "_p99"},
		}},
	}
	var peers []PeerResult
	for _, p := range r.Peers {
		if len(p.Runs) > 0 {
			peers = append(peers, p)
		}
	}
	if len(peers) == 0 {
		return fmt.Errorf("chart: no peer has results")
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, 2), make([]*plot.Plot, 2)}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Title.TextStyle.Font.Size = vg.Points(13)
		p.Y.Label.Text = pn.unit
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.Left = false
		var names []string
		for _, g := range pn.groups {
			names = append(names, g.label)
		}
		// Only the peers with a figure in this panel (the null broker
		// has no consume or end-to-end figures).
		var in []PeerResult
		for _, pr := range peers {
			for _, g := range pn.groups {
				if _, ok := pr.Median[g.metric]; ok {
					in = append(in, pr)
					break
				}
			}
		}
		barW := vg.Points(150 / float64(len(in)+1))
		top := 0.0
		for k, pr := range in {
			vals := make(plotter.Values, len(pn.groups))
			for j, g := range pn.groups {
				vals[j] = pr.Median[g.metric] / pn.div
				top = max(top, vals[j])
			}
			bars, err := plotter.NewBarChart(vals, barW)
			if err != nil {
				return err
			}
			bars.Color = peerColors[pr.Peer]
			bars.LineStyle.Width = 0
			bars.Offset = barW * vg.Length(float64(k)-float64(len(in)-1)/2)
			p.Add(bars)
			p.Legend.Add(PeerLabel(pr.Peer), bars)
			// The value above each bar.
			xys := make(plotter.XYs, len(vals))
			labels := make([]string, len(vals))
			for j, v := range vals {
				xys[j] = plotter.XY{X: float64(j), Y: v}
				if _, ok := pr.Median[pn.groups[j].metric]; ok {
					labels[j] = chartNumber(v)
				}
			}
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
			if err != nil {
				return err
			}
			for j := range lb.TextStyle {
				lb.TextStyle[j].Font.Size = vg.Points(9)
				lb.TextStyle[j].XAlign = draw.XCenter
				lb.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
			}
			p.Add(lb)
		}
		p.Y.Max = top * (1.15 + 0.06*float64(len(in))) // room for the labels and the legend
		p.NominalX(names...)
		plots[i/2][i%2] = p
	}
	img := vgimg.New(vg.Points(1100), vg.Points(760))
	dc := draw.New(img)
	// A header line with the run's shape.
	var labels []string
	for _, p := range peers {
		labels = append(labels, PeerLabel(p.Peer))
	}
	header := fmt.Sprintf("%s — medians of %d run(s), %s", strings.Join(labels, " vs "), o.Runs, time.Now().UTC().Format("2006-01-02"))
	hs := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter}
	hs.Font.Size = vg.Points(15)
	dc.FillText(hs, vg.Point{X: dc.Max.X / 2, Y: dc.Max.Y - vg.Points(20)}, header)
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(30))
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(20), PadY: vg.Points(20),
		PadTop: vg.Points(5), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	cs := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(cs[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func chartNumber(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
