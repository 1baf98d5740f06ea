package graph

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"
)

// newID returns a UUID of version 7 (RFC 9562): 48 bits of Unix
// milliseconds, then random bits, so that IDs made later sort later. Runs
// and checkpoints take such IDs, as LangGraph's clients expect UUIDs.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(b[:6], ms[2:])
	b[6] = 0x70 | b[6]&0x0f // version 7
	b[8] = 0x80 | b[8]&0x3f // variant 10
	return formatUUID(b)
}

// formatUUID writes b in the 8-4-4-4-12 form.
func formatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// taskID is the ID of task index of checkpoint id: a UUID derived from
// where the task is, so that every process names it alike.
func taskID(thread, ns, id string, index int, node string) string {
	sum := sha256.Sum256([]byte(thread + "\x00" + ns + "\x00" + id + "\x00" + strconv.Itoa(index) + "\x00" + node))
	var b [16]byte
	copy(b[:], sum[:16])
	b[6] = 0x50 | b[6]&0x0f // version 5: name-based (with SHA-256 in place of SHA-1)
	b[8] = 0x80 | b[8]&0x3f
	return formatUUID(b)
}
