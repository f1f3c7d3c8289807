package main

import (
	"fmt"
	"math"
	"strings"
)

// Hand-written SVG charts: a line chart on log-log axes and a grouped bar
// chart. Plain SVG 1.1, no scripts, no external fonts.

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

type point struct{ X, Y float64 }

type series struct {
	Name   string
	Points []point
}

const (
	chartW, chartH             = 760, 420
	padL, padR, padT, padB     = 80, 210, 50, 60
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	fontAttrs                  = `font-family="sans-serif" font-size="12"`
	gridColor, axisColor       = "#ddd", "#333"
	titleSize                  = 15
	legendLine, legendSpacing  = 24, 20
	barGroupGap, barInnerRatio = 0.25, 1.0
)

func svgHeader(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", chartW, chartH, chartW, chartH, fontAttrs)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="28" font-size="%d" font-weight="bold">%s</text>`+"\n", padL, titleSize, esc(title))
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// logTicks are the powers of ten covering [lo, hi].
func logTicks(lo, hi float64) (float64, float64, []float64) {
	a, z := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if z == a {
		z++
	}
	var t []float64
	for e := a; e <= z; e++ {
		t = append(t, math.Pow(10, e))
	}
	return math.Pow(10, a), math.Pow(10, z), t
}

func fmtTick(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM%s", v/1e6, unit)
	case v >= 1e3:
		return fmt.Sprintf("%gk%s", v/1e3, unit)
	default:
		return fmt.Sprintf("%g%s", v, unit)
	}
}

// logLogChart draws series on log-log axes.
func logLogChart(title, xLabel, yLabel string, ss []series, yFmt func(float64) string) string {
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
			minY, maxY = math.Min(minY, p.Y), math.Max(maxY, p.Y)
		}
	}
	x0, x1, xt := logTicks(minX, maxX)
	y0, y1, yt := logTicks(minY, maxY)
	px := func(x float64) float64 {
		return padL + plotW*(math.Log10(x)-math.Log10(x0))/(math.Log10(x1)-math.Log10(x0))
	}
	py := func(y float64) float64 {
		return padT + plotH - plotH*(math.Log10(y)-math.Log10(y0))/(math.Log10(y1)-math.Log10(y0))
	}
	var b strings.Builder
	svgHeader(&b, title)
	for _, t := range yt {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padL, py(t), padL+plotW, py(t), gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(t)+4, esc(yFmt(t)))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", px(t), padT, px(t), padT+plotH, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(t), padT+plotH+18, fmtTick(t, ""))
	}
	axes(&b, xLabel, yLabel)
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.X), py(p.Y), c)
		}
		legend(&b, i, s.Name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func axes(b *strings.Builder, xLabel, yLabel string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH, axisColor)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", padL, padT, padL, padT+plotH, axisColor)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, chartH-14, esc(xLabel))
	fmt.Fprintf(b, `<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, esc(yLabel))
}

func legend(b *strings.Builder, i int, name string) {
	x, y := padL+plotW+16, padT+10+i*legendSpacing
	c := palette[i%len(palette)]
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="10" fill="%s"/>`+"\n", x, y-9, legendLine-8, c)
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+legendLine, y, esc(name))
}

// barChart draws grouped bars: one group per label, one bar per series;
// logY draws the values on a log scale.
func barChart(title, yLabel string, groups []string, names []string, values [][]float64, logY bool, yFmt func(float64) string) string {
	maxV, minV := 0.0, math.Inf(1)
	for _, vs := range values {
		for _, v := range vs {
			maxV = math.Max(maxV, v)
			if v > 0 {
				minV = math.Min(minV, v)
			}
		}
	}
	var ticks []float64
	var y0, y1 float64
	if logY {
		y0, y1, ticks = logTicks(minV, maxV)
	} else {
		y0, y1 = 0, math.Max(maxV, 1e-9)
		step := niceStep(y1 / 5)
		y1 = math.Ceil(y1/step) * step
		for t := 0.0; t <= y1+step/2; t += step {
			ticks = append(ticks, t)
		}
	}
	py := func(v float64) float64 {
		if logY {
			v = math.Max(v, y0)
			return padT + plotH - plotH*(math.Log10(v)-math.Log10(y0))/(math.Log10(y1)-math.Log10(y0))
		}
		return padT + plotH - plotH*(v-y0)/(y1-y0)
	}
	var b strings.Builder
	svgHeader(&b, title)
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padL, py(t), padL+plotW, py(t), gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(t)+4, esc(yFmt(t)))
	}
	axes(&b, "", yLabel)
	gw := float64(plotW) / float64(len(groups))
	bw := gw * (1 - barGroupGap) / float64(len(names))
	for g, label := range groups {
		gx := padL + gw*float64(g) + gw*barGroupGap/2
		for s := range names {
			v := values[s][g]
			top := py(v)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				gx+bw*float64(s), top, bw*barInnerRatio-1, padT+plotH-top, palette[s%len(palette)], esc(names[s]), esc(yFmt(v)))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", padL+gw*float64(g)+gw/2, padT+plotH+18, esc(label))
	}
	for i, n := range names {
		legend(&b, i, n)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
