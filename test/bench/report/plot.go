// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteTimeline draws, for every scenario, the client's outage windows of every run of
// every system on a common time axis (0 = fault), one panel per scenario, and writes a
// PNG to path. Runs without failover are drawn in grey up to the timeout.
func WriteTimeline(r *Results, path string) error {
	var scenarios []string
	seen := map[string]bool{}
	for _, sys := range r.Systems {
		for _, sc := range sys.Scenarios {
			if !seen[sc.Name] {
				seen[sc.Name] = true
				scenarios = append(scenarios, sc.Name)
			}
		}
	}
	if len(scenarios) == 0 {
		return fmt.Errorf("nothing to plot")
	}
	rows := make([][]*plot.Plot, 0, len(scenarios))
	for _, name := range scenarios {
		p, err := scenarioPanel(r, name)
		if err != nil {
			return err
		}
		rows = append(rows, []*plot.Plot{p})
	}
	width, height := 28*vg.Centimeter, vg.Length(len(scenarios))*7*vg.Centimeter
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func scenarioPanel(r *Results, scenario string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "scenario: " + scenario
	p.X.Label.Text = "seconds after the fault (bars: client outage, one line per run)"
	p.X.Min = -0.5
	var ticks []plot.Tick
	grey := color.RGBA{R: 150, G: 150, B: 150, A: 255}
	n := len(r.Systems)
	for k, sys := range r.Systems {
		base := float64(n - 1 - k) // first system on top
		ticks = append(ticks, plot.Tick{Value: base + 0.45, Label: sys.Name})
		sc, ok := sys.Scenario(scenario)
		if !ok {
			continue
		}
		for j, run := range sc.Runs {
			y := base + 0.05 + 0.8*float64(j+1)/float64(len(sc.Runs)+1)
			var segs []plotter.XYs
			col := plotutil.Color(k)
			if !run.Failover {
				segs = append(segs, plotter.XYs{{X: 0, Y: y}, {X: sc.Timeout.Seconds(), Y: y}})
				col = grey
			} else {
				for _, w := range run.Windows {
					segs = append(segs, plotter.XYs{{X: w.Start.Seconds(), Y: y}, {X: w.End.Seconds(), Y: y}})
				}
				// A faint line for the whole run, so that runs without outage show too.
				l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: run.Reverted.Seconds(), Y: y}})
				if err != nil {
					return nil, err
				}
				l.Width = vg.Points(0.5)
				l.Color = color.RGBA{R: 210, G: 210, B: 210, A: 255}
				p.Add(l)
			}
			for _, s := range segs {
				l, err := plotter.NewLine(s)
				if err != nil {
					return nil, err
				}
				l.Width = vg.Points(3)
				l.Color = col
				p.Add(l)
				p.X.Max = max(p.X.Max, s[1].X)
			}
		}
	}
	fault, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: float64(n)}})
	if err != nil {
		return nil, err
	}
	fault.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(fault)
	p.Y.Min, p.Y.Max = 0, float64(n)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Max = max(p.X.Max+0.5, 2)
	p.Add(plotter.NewGrid())
	return p, nil
}
