package search

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// A catalog with a tool and its near-copies: one with a longer name (a
// variant the request never names), one whose description alone repeats
// the request's common words.
var rerankDocs = []Document{
	{Name: "getWeather", Description: "Weather for a city."},
	{Name: "getWeatherFlightStatus", Description: "Weather for a city: city weather, weather of any city. Flight status by flight number."},
	{Name: "cityGuide", Description: "A guide to a city: get weather, get events, get hotels, get food, get a city map for the city."},
	{Name: "sendEmail", Description: "Send an email."},
}

func featuresOf(t *testing.T, ix *Index, q string) map[string][NumFeatures]float32 {
	t.Helper()
	names, scores, feats, _ := ix.candidateFeatures(q, 10)
	if len(names) != len(scores) || len(names) != len(feats) {
		t.Fatalf("candidateFeatures: %d names, %d scores, %d feature rows", len(names), len(scores), len(feats))
	}
	out := map[string][NumFeatures]float32{}
	for i, n := range names {
		out[n] = feats[i]
		for k, v := range feats[i] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: feature %s is %v", n, FeatureNames[k], v)
			}
		}
	}
	return out
}

func TestRerankFeatures(t *testing.T) {
	fw := DefaultWeights
	fw.RerankDepth = 10 // the features' data, the ranking as by default
	ix := build(t, rerankDocs, &Config{Weights: &fw})
	f := featuresOf(t, ix, "get weather for my city")
	w, v, g := f["getWeather"], f["getWeatherFlightStatus"], f["cityGuide"]
	if _, ok := f["sendEmail"]; ok {
		t.Error("a tool that matched nothing is a candidate")
	}
	// Every name word of getWeather is in the request; half of the
	// variant's are.
	if w[ftNameCover] != 1 || v[ftNameCover] >= 0.75 || v[ftNameCover] <= 0.25 {
		t.Errorf("name cover: getWeather %v, getWeatherFlightStatus %v", w[ftNameCover], v[ftNameCover])
	}
	if g[ftNameCover] != 0.5 { // city guide: "city" is asked for, "guide" is not
		t.Errorf("name cover of cityGuide = %v, want 0.5", g[ftNameCover])
	}
	for _, c := range []struct {
		name string
		f    [NumFeatures]float32
	}{{"getWeather", w}, {"getWeatherFlightStatus", v}, {"cityGuide", g}} {
		for _, k := range []int{ftCover, ftNameCover, ftNameHit, ftExpanded, ftPeak} {
			if c.f[k] < 0 || c.f[k] > 1.0001 {
				t.Errorf("%s: %s = %v, want a share in [0, 1]", c.name, FeatureNames[k], c.f[k])
			}
		}
	}
	if !(g[ftLength] > w[ftLength]) {
		t.Errorf("length: cityGuide %v not above getWeather %v", g[ftLength], w[ftLength])
	}
	if w[ftCover] < v[ftCover]-1e-6 || w[ftCover] == 0 {
		t.Errorf("cover: getWeather %v, getWeatherFlightStatus %v", w[ftCover], v[ftCover])
	}
}

// name_behind: a name that adds words to a name the request spelt out is
// behind it by the difference of their name covers; the best of the
// group, and a tool whose name matches no query word, are not behind.
func TestRerankNameBehind(t *testing.T) {
	fw := DefaultWeights
	fw.RerankDepth = 10
	ix := build(t, []Document{
		{Name: "scan_isbn", Description: "Look up a book by its ISBN."},
		{Name: "scan_isbn_books_7", Description: "Look up a book by its ISBN. Books of the week, scan a shelf."},
		{Name: "GetUserToken", Description: "Get a token for a user: scan the ISBN database on login."},
		{Name: "isbn_scanner_lookup", Description: "Scan a barcode."},
	}, &Config{Weights: &fw})
	f := featuresOf(t, ix, "scan the ISBN of this book")
	want := map[string]float32{
		"scan_isbn":           0,           // every name word asked for: the best of its group
		"scan_isbn_books_7":   0.75 - 1,    // scan, isbn, book(s) of four words
		"GetUserToken":        0,           // its name matches no query word
		"isbn_scanner_lookup": 1.0/3.0 - 1, // isbn only (scanner is not scan)
	}
	for name, w := range want {
		got, ok := f[name]
		if !ok {
			t.Fatalf("%s is not a candidate", name)
		}
		if d := got[ftNameBehind] - w; d > 1e-5 || d < -1e-5 {
			t.Errorf("%s: name_behind %v, want %v (name cover %v)", name, got[ftNameBehind], w, got[ftNameCover])
		}
	}
	// And the ranking: the copy, first by score, falls below the original
	// with a weight.
	for _, weight := range []float64{0, 1} {
		rw := DefaultWeights
		rw.RerankDepth = 10
		rw.Rerank[ftNameBehind] = weight
		got := top(t, build(t, []Document{
			{Name: "scan_isbn", Description: "Reads the code on the back cover of a book and returns its title, author and publisher."},
			{Name: "scan_isbn_shelf_7", Description: "Scan an ISBN: scan ISBN codes. Lists a shelf."},
		}, &Config{Weights: &rw}), "scan the ISBN", 2)
		want := map[float64]string{0: "scan_isbn_shelf_7", 1: "scan_isbn"}[weight]
		if len(got) != 2 || got[0] != want {
			t.Errorf("weight %v: top 2 = %v, want %s first", weight, got, want)
		}
	}
}

func TestRerankOrders(t *testing.T) {
	q := "get weather for my city"
	pw := DefaultWeights
	pw.Overlap = 0
	pw.RerankDepth = 10
	plain := build(t, rerankDocs, &Config{Weights: &pw})
	w := DefaultWeights
	w.Overlap = 0
	w.Rerank = [NumFeatures]float64{}
	w.Rerank[ftNameCover] = 4 // strong: a name made of the request's words wins
	w.RerankDepth = 10
	ix := build(t, rerankDocs, &Config{Weights: &w})
	// The order is the candidates' score times exp(Σ weight·feature).
	names, scores, feats, _ := plain.candidateFeatures(q, 10)
	type c struct {
		name string
		key  float64
	}
	var want []c
	for i, n := range names {
		want = append(want, c{n, scores[i] * math.Exp(4*float64(feats[i][ftNameCover]))})
	}
	slices.SortStableFunc(want, func(a, b c) int {
		if a.key != b.key {
			if a.key > b.key {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	got := top(t, ix, q, len(want))
	for i := range want {
		if got[i] != want[i].name {
			t.Fatalf("re-ranked %v, want %v", got, want)
		}
	}
	if got[0] != "getWeather" {
		t.Errorf("re-ranked: %v", got)
	}
	// The other way round: a weight against the feature sends the
	// complete name down, so the weights really reach the ranking.
	w.Rerank[ftNameCover] = -4
	if got := top(t, build(t, rerankDocs, &Config{Weights: &w}), q, 3); got[0] == "getWeather" {
		t.Errorf("negative name cover weight: %v", got)
	}
	// The exact-name match stays first whatever the weights.
	if got := top(t, build(t, rerankDocs, &Config{Weights: &w}), "getWeatherFlightStatus", 2); got[0] != "getWeatherFlightStatus" {
		t.Errorf("exact name not first: %v", got)
	}
	// Scores stay a ranking's scores: descending, and equal for equal
	// tools (ties by name).
	r, err := ix.Search(q, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(r.Hits); i++ {
		a, b := r.Hits[i-1], r.Hits[i]
		if a.Score < b.Score || (a.Score == b.Score && a.Name > b.Name) {
			t.Errorf("hits out of order: %v", r.Hits)
		}
	}
}

// The re-rank with the diversified top: both run, and the re-rank's
// order is what the diversified top starts from.
func TestRerankWithDiversify(t *testing.T) {
	w := DefaultWeights
	w.Overlap = 0.3
	w.Rerank = [NumFeatures]float64{}
	w.Rerank[ftNameCover] = 4
	w.RerankDepth = 10
	ix := build(t, rerankDocs, &Config{Weights: &w})
	if got := top(t, ix, "get weather for my city", 3); got[0] != "getWeather" {
		t.Errorf("got %v", got)
	}
	// A query of nothing the index knows, and of stop words alone.
	for _, q := range []string{"zzqx", "the of and", "   "} {
		if _, err := ix.Search(q, 5); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
}
