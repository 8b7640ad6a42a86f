// Package configs holds Chorus's configuration: the JSON file format (in the
// style of OVOS's mycroft.conf, reusing its key names where the concept is
// the same), its defaults and validation, the up.json hand-off file, and the
// example files in this folder (chorus.json, the example skills, systemd units).
package configs
