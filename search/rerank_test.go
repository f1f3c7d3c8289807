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
