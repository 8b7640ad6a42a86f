package mqtt

import (
	"bytes"
	"io"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestPacketReaderHoldsABufferOnlyWhileBytesWait reads packets (here: a
// type byte, a one-byte length and the body, as ReadFixedHeader and
// ReadPacket do) and checks the bytes read and when the reader holds a
// buffer: not while idle, kept while the next packet's bytes are buffered.
func TestPacketReaderHoldsABufferOnlyWhileBytesWait(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 100) // larger than the 16-byte buffer
	tests := []struct {
		name    string
		stream  [][]byte // what the peer sends, each a separate write
		packets [][]byte // the bodies to read, in order
		holding []bool   // whether a buffer is held after each packet's release
	}{
		{
			name:    "one packet",
			stream:  [][]byte{{0x30, 3, 'a', 'b', 'c'}},
			packets: [][]byte{[]byte("abc")},
			holding: []bool{false},
		},
		{
			name:    "two short packets in one write: both read from the reader's own bytes, no buffer",
			stream:  [][]byte{{0x30, 1, 'a', 0x30, 2, 'b', 'c'}},
			packets: [][]byte{[]byte("a"), []byte("bc")},
			holding: []bool{false, false},
		},
		{
			name:    "two packets in one write, past the reader's own bytes: the buffer stays for the second",
			stream:  [][]byte{append(append([]byte{0x30, 14}, bytes.Repeat([]byte{'a'}, 14)...), 0x30, 2, 'b', 'c')},
			packets: [][]byte{bytes.Repeat([]byte{'a'}, 14), []byte("bc")},
			holding: []bool{true, false},
		},
		{
			name:    "a packet larger than the buffer",
			stream:  [][]byte{append([]byte{0x30, 100}, big...)},
			packets: [][]byte{big},
			holding: []bool{false},
		},
		{
			name:    "packets in separate writes",
			stream:  [][]byte{{0x30, 1, 'a'}, {0x30, 1, 'b'}},
			packets: [][]byte{[]byte("a"), []byte("b")},
			holding: []bool{false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newPacketReader(&writes{chunks: tt.stream}, newReadBufferPool(16))
			require.Nil(t, r.br, "a new reader holds no buffer")
			for i, want := range tt.packets {
				typ, got := readShortPacket(t, r)
				require.Equal(t, byte(0x30), typ, "packet %d: type byte", i)
				require.Equal(t, want, got, "packet %d", i)
				r.release()
				require.Equal(t, tt.holding[i], r.br != nil, "packet %d: holding a buffer", i)
			}
			_, err := r.ReadByte()
			require.ErrorIs(t, err, io.EOF)
			require.Nil(t, r.br, "a reader at the end holds no buffer")
		})
	}
}

// readShortPacket reads one packet whose remaining length fits in one
// byte from r: its type byte and its body.
func readShortPacket(t *testing.T, r *packetReader) (byte, []byte) {
	t.Helper()
	typ, err := r.ReadByte()
	require.NoError(t, err)
	n, err := r.ReadByte()
	require.NoError(t, err)
	body := make([]byte, n)
	_, err = io.ReadFull(r, body)
	require.NoError(t, err)
	return typ, body
}

// writes returns its chunks one per Read call (as a socket returns what
// one write sent), then io.EOF; calls counts the Read calls.
type writes struct {
	chunks [][]byte
	calls  int
}

func (w *writes) Read(p []byte) (int, error) {
	w.calls++
	if len(w.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, w.chunks[0])
	w.chunks[0] = w.chunks[0][n:]
	if len(w.chunks[0]) == 0 {
		w.chunks = w.chunks[1:]
	}
	return n, nil
}

// TestPacketReaderReadsAShortPacketInOneCall: a PUBACK (4 bytes) that
// arrives while the reader waits is read whole by the call that ends the
// wait, without a buffer; a longer packet takes a second call, through a
// buffer it gives back.
func TestPacketReaderReadsAShortPacketInOneCall(t *testing.T) {
	long := append([]byte{0x30, 30}, bytes.Repeat([]byte{'x'}, 30)...)
	w := &writes{chunks: [][]byte{{0x40, 2, 0, 7}, long}}
	r := newPacketReader(w, newReadBufferPool(64))
	for i, want := range [][]byte{{0, 7}, long[2:]} {
		_, got := readShortPacket(t, r)
		require.Equal(t, want, got, "packet %d", i)
		r.release()
		require.Nil(t, r.br, "packet %d: holding a buffer", i)
		require.Equal(t, 1+i*2, w.calls, "packet %d: read calls so far", i)
	}
}

// TestPacketReaderSize: the reader's own bytes fit in the 48-byte size
// class that v2.7.9's one-byte array already took, so a connection costs
// no more for them.
func TestPacketReaderSize(t *testing.T) {
	require.LessOrEqual(t, int(unsafe.Sizeof(packetReader{})), 48)
}
