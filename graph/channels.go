package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Compact checkpoints (format 2): the state is stored as channels, one per
// field with a handle (by its JSON name) and RestChannel for the fields
// without one, as LangGraph's channel_versions and checkpoint_blobs. A
// checkpoint names each channel's version; a channel's value is stored
// again only in a checkpoint whose step wrote the field — a version is the
// ID of the checkpoint that introduced it — so a thread's storage grows
// with what its steps change, not with its state's size times its steps.

// chans is a checkpointing run's record of its channels.
type chans struct {
	versions map[string]string // of the run's last checkpoint
	sizes    map[string]int    // encoded size of each channel's value
	dirty    map[string]bool   // fields written since
	all      bool              // every channel may have changed
	// prev: the values of the checkpoint an Invoke continues, by channel:
	// an input that leaves a field as it was does not store it again.
	prev map[string][]byte
}

// touched marks a field as written since the last checkpoint.
func (r *run[S]) touched(f Field[S]) {
	if r.ch != nil && !r.ch.all {
		r.ch.dirty[f.key()] = true
	}
}

// resetChannels sets the run's channels to those of cp (loaded): unchanged
// until something writes them. A format-1 checkpoint has none, so the
// next checkpoint stores every channel.
func (r *run[S]) resetChannels(cp *Checkpoint) {
	if r.cp == nil {
		return
	}
	r.ch = &chans{versions: cp.Versions, sizes: map[string]int{}, dirty: map[string]bool{}, all: len(cp.Versions) == 0}
	for _, cv := range cp.Values {
		r.ch.sizes[cv.Channel] = len(cv.Value)
	}
}

// allChanged marks every channel as possibly changed (an input, an edit),
// keeping prev's values to compare with.
func (r *run[S]) allChanged(prev *Checkpoint) {
	if r.cp == nil {
		return
	}
	r.resetChannels(&Checkpoint{})
	if prev != nil && len(prev.Versions) > 0 {
		r.ch.versions = prev.Versions
		r.ch.prev = make(map[string][]byte, len(prev.Values))
		for _, cv := range prev.Values {
			r.ch.prev[cv.Channel] = cv.Value
		}
	}
}

// encodeChannels fills cp's Versions and Values from the state: a new
// version, with its value, for each channel that changed; the last
// version for the others. It returns the state's encoded size.
func (r *run[S]) encodeChannels(cp *Checkpoint) (int, error) {
	ch := r.ch
	if ch == nil {
		ch = &chans{all: true, sizes: map[string]int{}}
		r.ch = ch
	}
	cp.Format = CheckpointFormat
	cp.Versions = make(map[string]string, len(r.c.fields)+1)
	size := 0
	put := func(key string, encode func() ([]byte, error)) error {
		if v, ok := ch.versions[key]; ok && !ch.all && !ch.dirty[key] {
			cp.Versions[key] = v
			size += ch.sizes[key]
			return nil
		}
		data, err := encode()
		if err != nil {
			return err
		}
		size += len(data)
		ch.sizes[key] = len(data)
		if prev, ok := ch.prev[key]; ok && ch.versions[key] != "" && bytes.Equal(prev, data) {
			cp.Versions[key] = ch.versions[key]
			return nil
		}
		cp.Versions[key] = cp.ID
		cp.Values = append(cp.Values, ChannelValue{Channel: key, Version: cp.ID, Value: data})
		return nil
	}
	if err := put(RestChannel, func() ([]byte, error) {
		rest := r.state
		for _, f := range r.c.fields {
			f.channel().clear(&rest)
		}
		return json.Marshal(rest)
	}); err != nil {
		return 0, fmt.Errorf("graph: the state cannot be checkpointed as JSON: %w", err)
	}
	for _, f := range r.c.fields {
		if err := put(f.key(), func() ([]byte, error) { return f.channel().encode(&r.state) }); err != nil {
			return 0, fmt.Errorf("graph: field %s of the state cannot be checkpointed as JSON: %w", f.goName(), err)
		}
	}
	ch.versions, ch.all, ch.prev = cp.Versions, false, nil
	clear(ch.dirty)
	if ch.dirty == nil {
		ch.dirty = map[string]bool{}
	}
	return size, nil
}
