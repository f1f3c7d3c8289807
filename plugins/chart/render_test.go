package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cjkFamilies are font families with Chinese glyphs that Linux
// distributions package (Debian: fonts-noto-cjk, fonts-wqy-microhei,
// fonts-wqy-zenhei, fonts-arphic-*, fonts-droid-fallback).
var cjkFamilies = []string{"Noto Sans CJK", "Noto Serif CJK", "Source Han", "WenQuanYi", "Droid Sans Fallback", "AR PL"}

// need skips (or under CI fails) a test that needs a program.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (Debian: apt-get install librsvg2-bin imagemagick fonts-wqy-microhei; .ci/run does)", what)
	}
	t.Skipf("%s is missing (Debian: apt-get install librsvg2-bin imagemagick fonts-wqy-microhei)", what)
}

// imageMagick finds ImageMagick's convert (or magick) on PATH, skipping
// stand-ins that are not ImageMagick.
func imageMagick() string {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		for _, name := range []string{"magick", "convert"} {
			p := filepath.Join(dir, name)
			if out, err := exec.Command(p, "-version").Output(); err == nil && strings.HasPrefix(string(out), "Version: ImageMagick") {
				return p
			}
		}
	}
	return ""
}

// imCJKFont is the name ImageMagick gives an installed font with Chinese
// glyphs ("" if none).
func imCJKFont(convert string) string {
	out, _ := exec.Command(convert, "-list", "font").Output()
	var font string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if f, ok := strings.CutPrefix(line, "Font: "); ok {
			font = f
		}
		if fam, ok := strings.CutPrefix(line, "family: "); ok {
			for _, c := range cjkFamilies {
				if strings.Contains(fam, c) {
					return font
				}
			}
		}
	}
	return ""
}

// ink counts the dark pixels of a box of an image.
func ink(img image.Image, box image.Rectangle) int {
	n := 0
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if (r+g+b)/3 < 0x8000 {
				n++
			}
		}
	}
	return n
}

// TestChineseLabelsRender renders a chart with a Chinese title, category
// labels and legend with rsvg-convert and with ImageMagick, and checks
// that the title's, the labels' and the legend's boxes have ink, where the
// same chart without those texts has none (so the boxes are where the
// texts are, and an empty rendering fails).
//
// ImageMagick 6's own SVG renderer (MSVG, what Debian's imagemagick uses)
// reads font-family as one family name, never a list: it is given a CJK
// font with -font, as docs/SERVING.md says an operator must.
func TestChineseLabelsRender(t *testing.T) {
	_, err := exec.LookPath("rsvg-convert")
	need(t, "rsvg-convert", err == nil)
	convert := imageMagick()
	need(t, "ImageMagick", convert != "")
	font := imCJKFont(convert)
	need(t, "a font with Chinese glyphs", font != "")

	spec := func(title string, labels []string, name string) string {
		s := Spec{Title: title, Labels: labels, Series: []Series{{Name: name, Values: []float64{120, 95, 80}}}}
		if err := Check("bar", &s); err != nil {
			t.Fatal(err)
		}
		return Render("bar", s)
	}
	svg := spec("各城市销售额", []string{"北京", "上海", "广州"}, "销售额")
	blank := spec("", []string{"", "", ""}, " ")
	if !strings.Contains(svg, "sans-serif\"") || !strings.Contains(svg, "WenQuanYi Micro Hei") {
		t.Fatalf("the font stack does not end in a generic family or lacks common CJK fonts: %.300s", svg)
	}
	dir := t.TempDir()
	boxes := map[string]image.Rectangle{
		"title":  image.Rect(205, 12, 505, 42),
		"labels": image.Rect(padLeft, padTop+int(plotH)+6, width-padRight, padTop+int(plotH)+28),
		"legend": image.Rect(width-padRight+20+16, padTop-2, width-10, padTop+16), // right of the swatch
	}
	for _, r := range []struct {
		name   string
		render func(in, out string) *exec.Cmd
	}{
		{"rsvg-convert", func(in, out string) *exec.Cmd { return exec.Command("rsvg-convert", "-o", out, in) }},
		{"ImageMagick", func(in, out string) *exec.Cmd { return exec.Command(convert, "-font", font, in, out) }},
	} {
		for _, c := range []struct {
			name, svg string
			inked     bool
		}{{"chinese", svg, true}, {"blank", blank, false}} {
			in, out := filepath.Join(dir, c.name+".svg"), filepath.Join(dir, r.name+"-"+c.name+".png")
			os.WriteFile(in, []byte(c.svg), 0o644)
			if b, err := r.render(in, out).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", r.name, err, b)
			}
			data, _ := os.ReadFile(out)
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			for _, box := range []string{"title", "labels", "legend"} {
				n := ink(img, boxes[box])
				if c.inked && n < 40 {
					t.Errorf("%s: the %s's box is blank (%d dark pixels): the Chinese text was not drawn", r.name, box, n)
				}
				if !c.inked && n > 0 {
					t.Errorf("%s: the %s's box of the chart without text has %d dark pixels: the box is not where the text is", r.name, box, n)
				}
			}
		}
	}
}
