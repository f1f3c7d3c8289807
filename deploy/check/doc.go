// Package check holds the tests that keep deploy/ honest: every
// Kubernetes manifest decodes strictly into the Kubernetes API's own Go
// types (an unknown or misspelt field is an error), the objects agree with
// each other (selectors, names, ports, probes, grace periods), and the
// toolshed.yaml of the ConfigMap loads with Toolshed's own configuration
// loader. It is a module of its own so the Kubernetes API types never
// enter Toolshed's.
package check
