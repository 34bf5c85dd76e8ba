// sequence-source: a Go example. It writes the records "1", "2", … (up to `count`, or forever)
// to a topic and resumes after the last stored number. `fail.at` makes it fail at that number,
// to show how an error reaches the task's status.
//
// Package export_wharf_connector_connector describes the plugin and splits its config into tasks.
package export_wharf_connector_connector

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/wharf_connector_types"
)

func key(name, doc string, required bool, defaultValue string) wharf_connector_types.ConfigKey {
	def := witTypes.None[string]()
	if defaultValue != "" {
		def = witTypes.Some(defaultValue)
	}
	return wharf_connector_types.ConfigKey{
		Name:          name,
		Type:          wharf_connector_types.ConfigType_String,
		DefaultValue:  def,
		Required:      required,
		Importance:    wharf_connector_types.Importance_High,
		Documentation: doc,
		Group:         witTypes.None[string](),
	}
}

func Describe() wharf_connector_types.PluginInfo {
	return wharf_connector_types.PluginInfo{
		Name:        "sequence-source",
		Version:     "0.1.0",
		Description: "Writes the numbers 1, 2, 3, … to a topic (Go example)",
		Kind:        wharf_connector_types.ConnectorKind_Source,
		Config: []wharf_connector_types.ConfigKey{
			key("topic", "The topic to write to.", true, ""),
			key("count", "How many numbers in all; -1 never stops.", false, "-1"),
			key("fail.at", "Fail the task when this number is reached (for trying out failures); 0 never.", false, "0"),
		},
	}
}

func Validate(config []witTypes.Tuple2[string, string]) []wharf_connector_types.ConfigProblem {
	return nil
}

// TaskConfigs runs one task: a sequence has one order.
func TaskConfigs(config []witTypes.Tuple2[string, string], maxTasks uint32) witTypes.Result[[][]witTypes.Tuple2[string, string], wharf_connector_types.ConnectorError] {
	return witTypes.Ok[[][]witTypes.Tuple2[string, string], wharf_connector_types.ConnectorError]([][]witTypes.Tuple2[string, string]{config})
}
