// Package export_wharf_connector_source_task is the running task.
package export_wharf_connector_source_task

import (
	"fmt"
	"runtime"
	"strconv"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/wharf_connector_host"
	"wit_component/wharf_connector_types"
)

type errorResult = wharf_connector_types.ConnectorError

// Task is the `task` resource; pinner and handle belong to the generated bindings.
type Task struct {
	pinner runtime.Pinner
	handle int32

	topic  string
	count  int64
	failAt int64
	next   int64
}

func (self *Task) OnDrop() {}

func setting(config []witTypes.Tuple2[string, string], name, fallback string) string {
	value := fallback
	for _, pair := range config {
		if pair.F0 == name {
			value = pair.F1
		}
	}
	return value
}

func number(config []witTypes.Tuple2[string, string], name, fallback string) (int64, error) {
	text := setting(config, name, fallback)
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a whole number: %w", name, text, err)
	}
	return n, nil
}

func fatal[T any](err error) witTypes.Result[T, errorResult] {
	return witTypes.Err[T, errorResult](wharf_connector_types.MakeConnectorErrorFatal(err.Error()))
}

var partition = []witTypes.Tuple2[string, wharf_connector_types.Scalar]{
	{F0: "sequence", F1: wharf_connector_types.MakeScalarText("numbers")},
}

func TaskOpen(config []witTypes.Tuple2[string, string]) witTypes.Result[*Task, errorResult] {
	count, err := number(config, "count", "-1")
	if err != nil {
		return fatal[*Task](err)
	}
	failAt, err := number(config, "fail.at", "0")
	if err != nil {
		return fatal[*Task](err)
	}
	task := &Task{topic: setting(config, "topic", ""), count: count, failAt: failAt, next: 1}
	stored := wharf_connector_host.CommittedOffsets([][]witTypes.Tuple2[string, wharf_connector_types.Scalar]{partition})
	if len(stored) == 1 && stored[0].IsSome() {
		for _, entry := range stored[0].Some() {
			if entry.F0 == "last" && entry.F1.Tag() == wharf_connector_types.Scalar_Integer {
				task.next = entry.F1.Integer() + 1
			}
		}
	}
	wharf_connector_host.Log(wharf_connector_host.Level_Info, fmt.Sprintf("counting from %d", task.next))
	return witTypes.Ok[*Task, errorResult](task)
}

func (self *Task) Poll(maxRecords uint32) witTypes.Result[[]wharf_connector_types.SourceRecord, errorResult] {
	records := make([]wharf_connector_types.SourceRecord, 0, maxRecords)
	for uint32(len(records)) < maxRecords && (self.count < 0 || self.next <= self.count) {
		if self.failAt > 0 && self.next == self.failAt {
			return fatal[[]wharf_connector_types.SourceRecord](fmt.Errorf("reached fail.at=%d", self.failAt))
		}
		n := self.next
		records = append(records, wharf_connector_types.SourceRecord{
			SourcePartition: partition,
			SourceOffset: []witTypes.Tuple2[string, wharf_connector_types.Scalar]{
				{F0: "last", F1: wharf_connector_types.MakeScalarInteger(n)},
			},
			Topic:     self.topic,
			Partition: witTypes.None[int32](),
			Key:       witTypes.None[[]uint8](),
			Value:     witTypes.Some([]uint8(strconv.FormatInt(n, 10))),
			Timestamp: witTypes.None[int64](),
		})
		self.next++
	}
	return witTypes.Ok[[]wharf_connector_types.SourceRecord, errorResult](records)
}

func (self *Task) Commit() witTypes.Result[witTypes.Unit, errorResult] {
	return witTypes.Ok[witTypes.Unit, errorResult](witTypes.Unit{})
}

func (self *Task) Close() {}
