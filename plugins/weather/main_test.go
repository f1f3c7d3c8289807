package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// A local stand-in for an Open-Meteo-compatible service on 127.0.0.1.
func weatherServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/v1/search" && q.Get("name") == "北京":
			fmt.Fprint(w, `{"results":[{"name":"北京","country":"中国","latitude":39.9,"longitude":116.4}]}`)
		case r.URL.Path == "/v1/search":
			fmt.Fprint(w, `{}`)
		case r.URL.Path == "/v1/forecast" && q.Get("current") != "":
			unit := 21.5
			if q.Get("temperature_unit") == "fahrenheit" {
				unit = 70.7
			}
			fmt.Fprintf(w, `{"current":{"time":"2026-12-02T16:00","temperature_2m":%g,"relative_humidity_2m":40,"wind_speed_10m":12.3,"weather_code":61}}`, unit)
		case r.URL.Path == "/v1/forecast":
			fmt.Fprintf(w, `{"daily":{"time":["2026-12-03","2026-12-04"],"temperature_2m_max":[8,10],"temperature_2m_min":[-2,1],"precipitation_probability_max":[10,80],"weather_code":[0,63]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestWeather(t *testing.T) {
	srv := weatherServer()
	defer srv.Close()
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/weather.json",
		Grants: wasm.Grants{Config: map[string]string{"weather.endpoint": srv.URL, "weather.geocoding": srv.URL},
			HTTP: wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true}}})
	res := p.Call("getCurrentWeather", map[string]any{"location": "北京"})
	if res.IsError || res.Content != "北京, 中国 at 2026-12-02T16:00: 小雨 light rain, 21.5°C, humidity 40%, wind 12.3 km/h" {
		t.Fatalf("current: %+v", res)
	}
	res = p.Call("getCurrentWeather", map[string]any{"location": "39.9, 116.4", "units": "imperial"})
	if res.IsError || !strings.Contains(res.Content, "70.7°F") {
		t.Fatalf("coordinates: %+v", res)
	}
	res = p.Call("getWeatherForecast", map[string]any{"location": "北京", "days": 2})
	if res.IsError || !strings.Contains(res.Content, "2026-12-04: 中雨 rain, 1–10°C, rain 80%") {
		t.Fatalf("forecast: %+v", res)
	}
	res = p.Call("getCurrentWeather", map[string]any{"location": "Atlantis"})
	if !res.IsError || !strings.Contains(res.Content, `no place called "Atlantis"`) {
		t.Fatalf("unknown place: %+v", res)
	}
	// Without the HTTP grant the plugin says so.
	denied := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/weather.json"})
	if res := denied.Call("getCurrentWeather", map[string]any{"location": "1,2"}); !res.IsError || !strings.Contains(res.Content, `"http" is not granted`) {
		t.Fatalf("denied: %+v", res)
	}
}
