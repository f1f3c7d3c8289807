package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Series is one named list of values (bar, line, pie) or points (scatter).
type Series struct {
	Name   string       `json:"name"`
	Values []float64    `json:"values,omitempty"`
	Points [][2]float64 `json:"points,omitempty"`
}

// Spec is what a chart tool receives.
type Spec struct {
	Title  string   `json:"title"`
	Labels []string `json:"labels"`
	Series []Series `json:"series"`
	XLabel string   `json:"x_label"`
	YLabel string   `json:"y_label"`
}

const (
	width, height             = 800, 500
	padLeft, padRight         = 80, 170
	padTop, padBottom         = 60, 80
	maxPoints                 = 10000
	fontFamily                = `'Noto Sans CJK SC','Source Han Sans SC','PingFang SC','Hiragino Sans GB','Microsoft YaHei','WenQuanYi Micro Hei','WenQuanYi Zen Hei','Droid Sans Fallback',sans-serif`
	plotW, plotH      float64 = width - padLeft - padRight, height - padTop - padBottom
)

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
	return r.Replace(s)
}

// Check validates a spec for a chart kind; the error is for the model.
func Check(kind string, s *Spec) error {
	if len(s.Series) == 0 {
		return errors.New("give at least one series")
	}
	n := 0
	for i, se := range s.Series {
		if se.Name == "" {
			s.Series[i].Name = fmt.Sprintf("series %d", i+1)
		}
		if kind == "scatter" {
			if len(se.Points) == 0 {
				return fmt.Errorf("series %q has no points ([x, y] pairs)", s.Series[i].Name)
			}
			for _, p := range se.Points {
				if !finite(p[0]) || !finite(p[1]) {
					return fmt.Errorf("series %q has a point that is not a finite number", s.Series[i].Name)
				}
			}
			n += len(se.Points)
			continue
		}
		if len(se.Values) != len(s.Labels) {
			return fmt.Errorf("series %q has %d values for %d labels: give one value per label", s.Series[i].Name, len(se.Values), len(s.Labels))
		}
		for _, v := range se.Values {
			if !finite(v) {
				return fmt.Errorf("series %q has a value that is not a finite number", s.Series[i].Name)
			}
			if kind == "pie" && v < 0 {
				return fmt.Errorf("a pie chart cannot show negative values (series %q)", s.Series[i].Name)
			}
		}
		n += len(se.Values)
	}
	if kind != "scatter" && len(s.Labels) == 0 {
		return errors.New("give the labels (one per category or point in time)")
	}
	if kind == "pie" && len(s.Series) != 1 {
		return errors.New("a pie chart shows one series")
	}
	if n > maxPoints {
		return fmt.Errorf("%d points is more than the %d a chart can show", n, maxPoints)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if span/(step*m) <= float64(n) {
			step *= m
			break
		}
	}
	var ticks []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	if last := ticks[len(ticks)-1]; last < hi-step*1e-9 {
		ticks = append(ticks, last+step) // the axis covers the largest value
	}
	return ticks
}

func label(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(fmt.Sprintf("%.2f", v/1e9)) + "B"
	case a >= 1e6:
		return trim(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case a >= 1e4:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return trim(fmt.Sprintf("%.4f", v))
}

// exactLabel is the value in full, for tooltips (the data behind the picture).
func exactLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Render draws the chart as a standalone SVG document.
func Render(kind string, s Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="13">`+"\n",
		width, height, width, height, esc(fontFamily))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")
	if s.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="32" text-anchor="middle" font-size="18" font-weight="bold">%s</text>`+"\n", (padLeft+width-padRight)/2, esc(s.Title))
	}
	switch kind {
	case "pie":
		pie(&b, s)
	case "scatter":
		scatter(&b, s)
	default:
		bars(&b, kind, s)
	}
	legend(&b, s)
	b.WriteString("</svg>\n")
	return b.String()
}

func legend(b *strings.Builder, s Spec) {
	names := []string{}
	if len(s.Series) == 1 && len(s.Labels) > 0 && len(s.Series[0].Values) > 0 && strings.Contains(b.String(), `class="slice"`) {
		names = s.Labels // a pie's legend names the slices
	} else {
		for _, se := range s.Series {
			names = append(names, se.Name)
		}
	}
	x := width - padRight + 20
	for i, n := range names {
		if i == 20 {
			fmt.Fprintf(b, `<text x="%d" y="%d">… %d more</text>`+"\n", x+18, padTop+i*22+11, len(names)-i)
			break
		}
		y := padTop + i*22
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y, palette[i%len(palette)], x+18, y+11, esc(n))
	}
}

// axes draws the y grid and ticks for [lo, hi] and returns the scale.
func axes(b *strings.Builder, lo, hi float64, s Spec) func(float64) float64 {
	ticks := niceTicks(lo, hi, 6)
	lo, hi = math.Min(lo, ticks[0]), math.Max(hi, ticks[len(ticks)-1])
	y := func(v float64) float64 { return padTop + plotH - (v-lo)/(hi-lo)*plotH }
	for _, t := range ticks {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			padLeft, y(t), padLeft+plotW, y(t), padLeft-8, y(t)+4, esc(label(t)))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", padLeft, padTop, padLeft, padTop+plotH)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", padLeft, y(math.Max(lo, math.Min(0, hi))), padLeft+plotW, y(math.Max(lo, math.Min(0, hi))))
	if s.YLabel != "" {
		fmt.Fprintf(b, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padTop+plotH/2, esc(s.YLabel))
	}
	if s.XLabel != "" {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", padLeft+plotW/2, height-12, esc(s.XLabel))
	}
	return y
}

func bars(b *strings.Builder, kind string, s Spec) {
	lo, hi := 0.0, 0.0
	for _, se := range s.Series {
		for _, v := range se.Values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if kind == "line" {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, se := range s.Series {
			for _, v := range se.Values {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if lo > 0 && lo < hi/3 {
			lo = 0
		}
	}
	y := axes(b, lo, hi, s)
	n := len(s.Labels)
	slot := plotW / float64(n)
	every := max(1, n/24) // at most ~24 category labels
	for i, l := range s.Labels {
		if i%every != 0 {
			continue
		}
		x := padLeft + slot*(float64(i)+0.5)
		if n > 8 {
			fmt.Fprintf(b, `<text transform="translate(%.1f,%.1f) rotate(-40)" text-anchor="end" font-size="11">%s</text>`+"\n", x, padTop+plotH+16, esc(l))
		} else {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, padTop+plotH+20, esc(l))
		}
	}
	if kind == "line" {
		for k, se := range s.Series {
			var pts []string
			for i, v := range se.Values {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", padLeft+slot*(float64(i)+0.5), y(v)))
			}
			fmt.Fprintf(b, `<polyline class="line" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", palette[k%len(palette)], strings.Join(pts, " "))
			if len(se.Values) <= 60 {
				for i, v := range se.Values {
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s</title></circle>`+"\n",
						padLeft+slot*(float64(i)+0.5), y(v), palette[k%len(palette)], esc(s.Labels[i]), exactLabel(v))
				}
			}
		}
		return
	}
	bw := slot * 0.8 / float64(len(s.Series))
	for k, se := range s.Series {
		for i, v := range se.Values {
			x := padLeft + slot*float64(i) + slot*0.1 + bw*float64(k)
			top, bottom := y(math.Max(v, 0)), y(math.Min(v, 0))
			fmt.Fprintf(b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
				x, top, math.Max(bw-1, 1), math.Max(bottom-top, 0.5), palette[k%len(palette)], esc(se.Name), esc(s.Labels[i]), exactLabel(v))
		}
	}
}

func pie(b *strings.Builder, s Spec) {
	vals := s.Series[0].Values
	total := 0.0
	for _, v := range vals {
		total += v
	}
	cx, cy, r := padLeft+plotW/2, padTop+plotH/2, math.Min(plotW, plotH)/2-10
	if total == 0 {
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">0</text>`+"\n", cx, cy, r, cx, cy)
		return
	}
	a := -math.Pi / 2
	for i, v := range vals {
		frac := v / total
		if frac == 0 {
			continue
		}
		end := a + frac*2*math.Pi
		large := 0
		if frac > 0.5 {
			large = 1
		}
		if frac >= 0.9999 {
			fmt.Fprintf(b, `<circle class="slice" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`+"\n", cx, cy, r, palette[i%len(palette)])
		} else {
			fmt.Fprintf(b, `<path class="slice" d="M%.1f,%.1f L%.1f,%.1f A%.1f,%.1f 0 %d 1 %.1f,%.1f Z" fill="%s" stroke="#fff"><title>%s: %s (%.1f%%)</title></path>`+"\n",
				cx, cy, cx+r*math.Cos(a), cy+r*math.Sin(a), r, r, large, cx+r*math.Cos(end), cy+r*math.Sin(end),
				palette[i%len(palette)], esc(s.Labels[i]), esc(label(v)), frac*100)
		}
		if frac >= 0.04 {
			mid := (a + end) / 2
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#fff" font-size="12">%.1f%%</text>`+"\n",
				cx+r*0.65*math.Cos(mid), cy+r*0.65*math.Sin(mid)+4, frac*100)
		}
		a = end
	}
}

func scatter(b *strings.Builder, s Spec) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, se := range s.Series {
		for _, p := range se.Points {
			xlo, xhi = math.Min(xlo, p[0]), math.Max(xhi, p[0])
			ylo, yhi = math.Min(ylo, p[1]), math.Max(yhi, p[1])
		}
	}
	y := axes(b, ylo, yhi, s)
	xt := niceTicks(xlo, xhi, 8)
	xlo, xhi = math.Min(xlo, xt[0]), math.Max(xhi, xt[len(xt)-1])
	x := func(v float64) float64 { return padLeft + (v-xlo)/(xhi-xlo)*plotW }
	for _, t := range xt {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), padTop+plotH+20, esc(label(t)))
	}
	for k, se := range s.Series {
		for _, p := range se.Points {
			fmt.Fprintf(b, `<circle class="point" cx="%.1f" cy="%.1f" r="3.5" fill="%s" fill-opacity="0.75"/>`+"\n", x(p[0]), y(p[1]), palette[k%len(palette)])
		}
	}
}
