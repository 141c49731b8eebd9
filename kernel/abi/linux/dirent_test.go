package linux

import "testing"

func TestDirent64Encode(t *testing.T) {
	d := Dirent64{Ino: 42, Off: 7, Type: DT_REG, Name: "hello"}
	if d.Reclen() != 32 { // 19 + 5 + 1 = 25, rounded to 32
		t.Errorf("reclen %d", d.Reclen())
	}
	b := make([]byte, 40)
	for i := range b {
		b[i] = 0xee
	}
	if n := d.Encode(b[:31]); n != 0 {
		t.Errorf("encoded %d bytes into a short buffer", n)
	}
	if n := d.Encode(b); n != 32 {
		t.Fatalf("encoded %d bytes", n)
	}
	want := []byte{42, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 32, 0, DT_REG, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0, 0, 0, 0, 0, 0xee}
	if string(b[:33]) != string(want) {
		t.Errorf("got  %x\nwant %x", b[:33], want)
	}
	back, n := DecodeDirent64(b)
	if n != 32 || back != d {
		t.Errorf("decoded %+v (%d)", back, n)
	}
	// a name filling the record exactly: 19 + 12 + 1 = 32
	d.Name = "abcdefghijkl"
	if d.Reclen() != 32 {
		t.Errorf("reclen %d for 12-byte name", d.Reclen())
	}
	d.Name = "abcdefghijklm"
	if d.Reclen() != 40 {
		t.Errorf("reclen %d for 13-byte name", d.Reclen())
	}
	if _, n := DecodeDirent64(b[:10]); n != 0 {
		t.Error("decoded a truncated record")
	}
}

func TestTimespecEncode(t *testing.T) {
	ts := Timespec{Sec: -2, Nsec: 999999999}
	b := ts.Encode()
	if DecodeTimespec(b[:]) != ts {
		t.Errorf("round trip gave %+v", DecodeTimespec(b[:]))
	}
	if b[0] != 0xfe || b[7] != 0xff || b[8] != 0xff || b[11] != 0x3b {
		t.Errorf("bytes %x", b)
	}
}
