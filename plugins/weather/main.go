// Command weather is the bundled weather plugin (the article's 查天气):
// current conditions and forecasts from an Open-Meteo-compatible service
// through the host's HTTP capability. The operator names the service with
// the config keys weather.endpoint and weather.geocoding and allows their
// origins; the defaults are Open-Meteo's public API.
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolshed/toolshed/sdk"
	"github.com/toolshed/toolshed/sdk/abi"
)

type args struct {
	Location string `json:"location"`
	Units    string `json:"units"`
	Days     int    `json:"days"`
}

type place struct {
	Name    string  `json:"name"`
	Country string  `json:"country,omitempty"`
	Lat     float64 `json:"latitude"`
	Lon     float64 `json:"longitude"`
}

func setting(key, def string) string {
	if v, err := sdk.Config(key); err == nil && v != "" {
		return strings.TrimRight(v, "/")
	}
	return def
}

func getJSON(u string, v any) error {
	r, err := sdk.Fetch(abi.HTTPRequest{Method: "GET", URL: u, Headers: map[string]string{"Accept": "application/json"}})
	if err != nil {
		return err
	}
	if r.Status != 200 {
		return fmt.Errorf("the weather service answered %d: %.200s", r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("the weather service sent something that is not JSON: %v", err)
	}
	return nil
}

// locate turns "lat,lon" or a place name into coordinates.
func locate(loc string) (*place, error) {
	loc = strings.TrimSpace(loc)
	if lat, lon, ok := strings.Cut(loc, ","); ok {
		la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
		lo, err2 := strconv.ParseFloat(strings.TrimSpace(lon), 64)
		if err1 == nil && err2 == nil {
			if la < -90 || la > 90 || lo < -180 || lo > 180 {
				return nil, fmt.Errorf("coordinates %q are out of range", loc)
			}
			return &place{Name: loc, Lat: la, Lon: lo}, nil
		}
	}
	if loc == "" {
		return nil, fmt.Errorf("give a location: a city name or \"lat,lon\"")
	}
	var res struct {
		Results []place `json:"results"`
	}
	u := setting("weather.geocoding", "https://geocoding-api.open-meteo.com") + "/v1/search?count=1&language=zh&name=" + url.QueryEscape(loc)
	if err := getJSON(u, &res); err != nil {
		return nil, err
	}
	if len(res.Results) == 0 {
		return nil, fmt.Errorf("no place called %q was found; try a larger city or \"lat,lon\"", loc)
	}
	return &res.Results[0], nil
}

func unitParams(units string) (string, string, string) {
	if units == "imperial" {
		return "&temperature_unit=fahrenheit&wind_speed_unit=mph", "°F", "mph"
	}
	return "", "°C", "km/h"
}

// codes are WMO weather codes in words.
var codes = map[int]string{0: "晴 clear", 1: "大致晴朗 mainly clear", 2: "多云 partly cloudy", 3: "阴 overcast",
	45: "雾 fog", 48: "雾凇 rime fog", 51: "小毛毛雨 light drizzle", 53: "毛毛雨 drizzle", 55: "大毛毛雨 dense drizzle",
	61: "小雨 light rain", 63: "中雨 rain", 65: "大雨 heavy rain", 71: "小雪 light snow", 73: "中雪 snow", 75: "大雪 heavy snow",
	80: "阵雨 rain showers", 81: "强阵雨 heavy showers", 82: "暴雨 violent showers", 95: "雷暴 thunderstorm",
	96: "雷暴伴冰雹 thunderstorm with hail", 99: "强雷暴伴冰雹 severe thunderstorm with hail"}

func describe(code int) string {
	if d, ok := codes[code]; ok {
		return d
	}
	return fmt.Sprintf("weather code %d", code)
}

func where(p *place) string {
	if p.Country != "" {
		return p.Name + ", " + p.Country
	}
	return p.Name
}

func init() {
	sdk.Handle("getCurrentWeather", func(a args) (sdk.Result, error) {
		p, err := locate(a.Location)
		if err != nil {
			return sdk.Result{}, err
		}
		extra, tu, wu := unitParams(a.Units)
		var res struct {
			Current struct {
				Time     string  `json:"time"`
				Temp     float64 `json:"temperature_2m"`
				Humidity float64 `json:"relative_humidity_2m"`
				Wind     float64 `json:"wind_speed_10m"`
				Code     int     `json:"weather_code"`
			} `json:"current"`
		}
		u := fmt.Sprintf("%s/v1/forecast?latitude=%g&longitude=%g&current=temperature_2m,relative_humidity_2m,wind_speed_10m,weather_code&timezone=auto%s",
			setting("weather.endpoint", "https://api.open-meteo.com"), p.Lat, p.Lon, extra)
		if err := getJSON(u, &res); err != nil {
			return sdk.Result{}, err
		}
		c := res.Current
		return sdk.Result{Content: fmt.Sprintf("%s at %s: %s, %.1f%s, humidity %.0f%%, wind %.1f %s",
			where(p), c.Time, describe(c.Code), c.Temp, tu, c.Humidity, c.Wind, wu), Structured: map[string]any{"place": p, "current": c}}, nil
	})
	sdk.Handle("getWeatherForecast", func(a args) (sdk.Result, error) {
		p, err := locate(a.Location)
		if err != nil {
			return sdk.Result{}, err
		}
		days := a.Days
		if days <= 0 {
			days = 3
		}
		extra, tu, _ := unitParams(a.Units)
		var res struct {
			Daily struct {
				Time []string  `json:"time"`
				Max  []float64 `json:"temperature_2m_max"`
				Min  []float64 `json:"temperature_2m_min"`
				Rain []float64 `json:"precipitation_probability_max"`
				Code []int     `json:"weather_code"`
			} `json:"daily"`
		}
		u := fmt.Sprintf("%s/v1/forecast?latitude=%g&longitude=%g&daily=temperature_2m_max,temperature_2m_min,precipitation_probability_max,weather_code&forecast_days=%d&timezone=auto%s",
			setting("weather.endpoint", "https://api.open-meteo.com"), p.Lat, p.Lon, days, extra)
		if err := getJSON(u, &res); err != nil {
			return sdk.Result{}, err
		}
		d := res.Daily
		var b strings.Builder
		fmt.Fprintf(&b, "Forecast for %s:\n", where(p))
		for i := range d.Time {
			if i >= len(d.Max) || i >= len(d.Min) || i >= len(d.Code) {
				break
			}
			fmt.Fprintf(&b, "%s: %s, %.0f–%.0f%s", d.Time[i], describe(d.Code[i]), d.Min[i], d.Max[i], tu)
			if i < len(d.Rain) {
				fmt.Fprintf(&b, ", rain %.0f%%", d.Rain[i])
			}
			b.WriteString("\n")
		}
		return sdk.Result{Content: strings.TrimRight(b.String(), "\n"), Structured: map[string]any{"place": p, "daily": d}}, nil
	})
}

func main() {}
