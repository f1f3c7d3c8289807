package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
)

// tenancy is the series of the shares API keys have of the server: the
// plugin memory budget (all instances, and by key) and each database's
// query slots by key. A key is labelled by the first 12 hex digits of its
// tenant id (toolshed serve's is the sha256 of the key), never by the key.
type tenancy struct {
	rt        *wasm.Host
	sql       *sqlcap.Service
	artifacts *artifact.Store

	budget, used, share, refused, reclaimed, keyUsed, slots, slotShare, files, keyFiles *prometheus.Desc
	// The waits for room in the budget (server.instance_memory_wait).
	wait, waiting, waitsStarted, waitsEnded, waited *prometheus.Desc
}

func newTenancy(rt *wasm.Host, sql *sqlcap.Service, artifacts *artifact.Store) *tenancy {
	return &tenancy{rt: rt, sql: sql, artifacts: artifacts,
		files: prometheus.NewDesc("toolshed_artifacts_bytes",
			"Bytes of the artifacts kept (artifacts.max_mb bounds them at every write).", nil, nil),
		keyFiles: prometheus.NewDesc("toolshed_artifacts_key_bytes",
			"Bytes of the artifacts one API key's sessions stored (key \"earlier\": found from before a restart).", []string{"key"}, nil),
		budget: prometheus.NewDesc("toolshed_plugin_memory_budget_bytes",
			"The plugin memory budget: linear memory of all plugin instances together (server.instance_memory_mb; 0: none).", nil, nil),
		used: prometheus.NewDesc("toolshed_plugin_memory_bytes",
			"Committed linear memory of every live plugin instance (pooled ones included).", nil, nil),
		share: prometheus.NewDesc("toolshed_plugin_memory_key_share_bytes",
			"What one API key's sessions' instances may hold together (server.per_key.instance_memory_mb; 0: no share).", nil, nil),
		refused: prometheus.NewDesc("toolshed_plugin_memory_refusals_total",
			"Plugin instances not made and memory growths refused by the budget or a key's share.", nil, nil),
		reclaimed: prometheus.NewDesc("toolshed_plugin_instances_reclaimed_total",
			"Idle sessions' plugin instances closed to make room in the memory budget.", nil, nil),
		keyUsed: prometheus.NewDesc("toolshed_plugin_memory_key_bytes",
			"Linear memory held by one API key's sessions' plugin instances.", []string{"key"}, nil),
		slots: prometheus.NewDesc("toolshed_sql_key_slots_busy",
			"Query slots of a database one API key holds now.", []string{"database", "key"}, nil),
		slotShare: prometheus.NewDesc("toolshed_sql_key_slots_share",
			"Query slots of each database one API key may hold at once.", nil, nil),
		wait: prometheus.NewDesc("toolshed_plugin_memory_wait_limit_seconds",
			"How long a call whose new plugin instance finds no room in the memory budget waits for it (server.instance_memory_wait; 0: refused at once).", nil, nil),
		waiting: prometheus.NewDesc("toolshed_plugin_memory_waiting",
			"Calls waiting now for room in the plugin memory budget.", nil, nil),
		waitsStarted: prometheus.NewDesc("toolshed_plugin_memory_waits_started_total",
			"Calls that found no room in the plugin memory budget (or their key's share), idle instances reclaimed, and waited for it.", nil, nil),
		waitsEnded: prometheus.NewDesc("toolshed_plugin_memory_waits_total",
			"Waits for room in the plugin memory budget that ended: served (room was released), timeout (refused naming the budget), cancelled (the call's context ended, or the server closed).", []string{"outcome"}, nil),
		waited: prometheus.NewDesc("toolshed_plugin_memory_wait_seconds",
			"Time calls waited for room in the plugin memory budget, waits that ended.", nil, nil),
	}
}

func (c *tenancy) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.budget, c.used, c.share, c.refused, c.reclaimed, c.keyUsed, c.slots, c.slotShare, c.files, c.keyFiles,
		c.wait, c.waiting, c.waitsStarted, c.waitsEnded, c.waited} {
		ch <- d
	}
}

func (c *tenancy) Collect(ch chan<- prometheus.Metric) {
	if c.rt != nil {
		st := c.rt.MemoryStats()
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(st.Budget))
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(st.Used))
		ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, float64(st.PerTenant))
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.Refused))
		ch <- prometheus.MustNewConstMetric(c.reclaimed, prometheus.CounterValue, float64(c.rt.Stats().Reclaimed))
		for _, t := range slices.Sorted(maps.Keys(st.ByTenant)) {
			ch <- prometheus.MustNewConstMetric(c.keyUsed, prometheus.GaugeValue, float64(st.ByTenant[t]), keyLabel(t))
		}
		w := st.Waits
		ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, st.Wait.Seconds())
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(w.Waiting))
		ch <- prometheus.MustNewConstMetric(c.waitsStarted, prometheus.CounterValue, float64(w.Started))
		ch <- prometheus.MustNewConstMetric(c.waitsEnded, prometheus.CounterValue, float64(w.Served), "served")
		ch <- prometheus.MustNewConstMetric(c.waitsEnded, prometheus.CounterValue, float64(w.TimedOut), "timeout")
		ch <- prometheus.MustNewConstMetric(c.waitsEnded, prometheus.CounterValue, float64(w.Cancelled), "cancelled")
		ch <- prometheus.MustNewConstSummary(c.waited, w.Served+w.TimedOut+w.Cancelled, w.Waited.Seconds(), nil)
	}
	if c.artifacts != nil {
		total, by := c.artifacts.Usage()
		ch <- prometheus.MustNewConstMetric(c.files, prometheus.GaugeValue, float64(total))
		for _, t := range slices.Sorted(maps.Keys(by)) {
			ch <- prometheus.MustNewConstMetric(c.keyFiles, prometheus.GaugeValue, float64(by[t]), keyLabel(t))
		}
	}
	if c.sql != nil {
		use, share := c.sql.TenantSlots()
		ch <- prometheus.MustNewConstMetric(c.slotShare, prometheus.GaugeValue, float64(share))
		for _, u := range use {
			ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(u.Busy), u.Database, keyLabel(u.Tenant))
		}
	}
}

// keyLabel is a tenant id as a label: "none" for no key, else at most its
// first 12 characters.
func keyLabel(tenant string) string {
	if tenant == "" {
		return "none"
	}
	return tenant[:min(len(tenant), 12)]
}
