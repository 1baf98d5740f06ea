// Package storecodec is the stored form of checkpoints and task records
// shared by the SQL stores: JSON documents read back only into
// graph.Checkpoint and graph.TaskWrite, after their size and format version
// are checked, with unknown fields refused — stored bytes are untrusted
// input. It also holds the one rule every store applies in Put (Check).
package storecodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// MaxBytes is the default bound on one stored document: the engine's limit
// on a state or an update, plus room for the rest of the checkpoint.
const MaxBytes = graph.DefaultMaxCheckpointBytes + 1<<20

// ErrCorrupt marks a stored document that cannot be read back.
var ErrCorrupt = errors.New("stored checkpoint data is corrupt")

// EncodeCheckpoint returns the stored form of cp, without its Writes and
// Values (stored apart).
func EncodeCheckpoint(cp *graph.Checkpoint) ([]byte, error) {
	c := *cp
	if c.Format == 0 {
		c.Format = graph.CheckpointFormat
	}
	data, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encoding checkpoint %s of thread %q: %w", cp.ID, cp.Thread, err)
	}
	return data, nil
}

// DecodeCheckpoint reads a stored checkpoint of at most max bytes.
func DecodeCheckpoint(data []byte, max int) (*graph.Checkpoint, error) {
	if err := checkSize(data, max, "checkpoint"); err != nil {
		return nil, err
	}
	var head struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrCorrupt, err)
	}
	if head.Format > graph.CheckpointFormat {
		return nil, fmt.Errorf("%w: a checkpoint has format %d, and this version of deepgraph reads up to %d: upgrade it to read this store",
			graph.ErrCheckpointFormat, head.Format, graph.CheckpointFormat)
	}
	var cp graph.Checkpoint
	if err := strict(data, &cp); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrCorrupt, err)
	}
	if cp.Thread == "" || cp.ID == "" || cp.Step < 0 {
		return nil, fmt.Errorf("%w: checkpoint without a thread, an id or a valid step", ErrCorrupt)
	}
	return &cp, nil
}

// EncodeWrite returns the stored form of a task record, refusing one
// without a node or with a negative task index (which DecodeWrite would
// refuse as corrupt).
func EncodeWrite(w graph.TaskWrite) ([]byte, error) {
	if w.Task < 0 || w.Node == "" {
		return nil, fmt.Errorf("a task record needs a node and a task index ≥ 0 (got %q, %d)", w.Node, w.Task)
	}
	data, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encoding the record of task %d (%s): %w", w.Task, w.Node, err)
	}
	return data, nil
}

// DecodeWrite reads a stored task record of at most max bytes.
func DecodeWrite(data []byte, max int) (graph.TaskWrite, error) {
	var w graph.TaskWrite
	if err := checkSize(data, max, "task record"); err != nil {
		return w, err
	}
	if err := strict(data, &w); err != nil {
		return w, fmt.Errorf("%w: task record: %v", ErrCorrupt, err)
	}
	if w.Task < 0 || w.Node == "" {
		return w, fmt.Errorf("%w: task record without a node or a valid task index", ErrCorrupt)
	}
	return w, nil
}

func checkSize(data []byte, max int, what string) error {
	if max <= 0 {
		max = MaxBytes
	}
	if len(data) > max {
		return fmt.Errorf("%w: a stored %s is %d bytes, over the limit of %d", graph.ErrCheckpointTooLarge, what, len(data), max)
	}
	return nil
}

// strict decodes exactly one JSON value into v, refusing unknown fields.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}

// Check applies Put's rule: cp may follow the thread's newest checkpoint
// (newest is "" for a thread without checkpoints), or start a fork from an
// existing checkpoint (parentExists says whether cp.Parent exists).
func Check(cp *graph.Checkpoint, newest string, parentExists bool) error {
	if cp.Source == graph.SourceFork && cp.Parent != "" {
		if !parentExists {
			return fmt.Errorf("graph: fork of thread %q from checkpoint %s, which the store does not have", cp.Thread, cp.Parent)
		}
		return nil
	}
	if cp.Parent != newest {
		return &graph.ConflictingCheckpointError{Thread: cp.Thread, Parent: cp.Parent, Newest: newest}
	}
	return nil
}

// Validate checks what a store needs of a checkpoint before storing it:
// a thread and an id, channel values that name their channel and version,
// and task records that can be read back.
func Validate(cp *graph.Checkpoint) error {
	if cp == nil || cp.Thread == "" || cp.ID == "" {
		return errors.New("graph: a checkpoint needs a thread and an id")
	}
	for _, cv := range cp.Values {
		if cv.Channel == "" || cv.Version == "" {
			return fmt.Errorf("graph: checkpoint %s: a channel value needs a channel and a version (got %q, %q)", cp.ID, cv.Channel, cv.Version)
		}
	}
	for _, w := range cp.Writes {
		if w.Task < 0 || w.Node == "" {
			return fmt.Errorf("graph: checkpoint %s: a task record needs a node and a task index ≥ 0 (got %q, %d)", cp.ID, w.Node, w.Task)
		}
	}
	return nil
}

// Busy returns the refusal of a write by run on thread, whose lease is
// held by holder until until (holder "" when none), at now.
func Busy(thread, run, holder string, until, now time.Time) error {
	if holder != "" && holder != run && now.Before(until) {
		return &graph.ThreadBusyError{Thread: thread, Run: holder, Until: until}
	}
	return nil
}
